#pragma once

/// The schedule IR: what each stage does, in order, during one iteration.
///
/// A schedule is data, so it can be printed, loaded (schedule_io.hpp), validated and
/// simulated before a stage actor executes it. Every pipeline of a plan runs the same
/// schedule; its micro-batches may differ in size (sliced schedules split the first
/// ones into smaller slices).
///
/// A schedule has one list of actions per device of a pipeline. With `chunks` > 1 each
/// device holds that many pieces of the model (chunks, or virtual stages), not next to
/// each other, and each action names the chunk it runs on: interleaved schedules put
/// chunk c of device d at virtual stage c · devices + d (ChunkShape::loop), V-shaped
/// ones send the last device's first chunk back down the devices (ChunkShape::v). A
/// plan's stages are the virtual stages, in model order.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe {

/// What an action does. A backward is either whole (B) or split in two halves
/// (zero-bubble schedules): I, the gradient of the stage's input, which the stage
/// before waits for, and W, the gradients of its weights, which nobody waits for and a
/// schedule may defer into time the stage would otherwise wait. The stage's sync and
/// optimizer step end its iteration: where a schedule does not place them, each stage
/// syncs after its last action and steps once the sync is done; a schedule that places
/// them can overlap a chunk's all-reduce with the device's other work and keep its step
/// off the device until the device's backwards are done.
enum class Op : std::uint8_t {
  forward,         ///< F
  backward,        ///< B: I and W at once
  input_gradient,  ///< I: the input's gradient only, sent on to the stage before
  weight_gradient, ///< W: the weights' gradients of a micro-batch whose I has run
  /// The stage's gradients are final: its round with its replicas (the all-reduce)
  /// begins, beside the device's next actions. Of no micro-batch.
  sync,
  /// The stage's optimizer step, on its device, once its round has ended. Of no micro-batch.
  step
};

/// Whether an action of kind `op` computes a micro-batch (F, B, I, W), rather than
/// ending the stage's iteration (sync, step).
constexpr bool per_micro_batch(Op op) { return op <= Op::weight_gradient; }

/// The share of a stage's backward time that an action of kind `op` takes, where I
/// takes `input_gradient_share` of it (as the stage's profile measured, or half;
/// model_profile.hpp): 1 for B, that share for I, the rest for W; 0 for F, which has a
/// time of its own.
constexpr double backward_share(Op op, double input_gradient_share) {
  switch (op) {
  case Op::backward: return 1.0;
  case Op::input_gradient: return input_gradient_share;
  case Op::weight_gradient: return 1.0 - input_gradient_share;
  case Op::forward:
  case Op::sync:
  case Op::step: break;
  }
  return 0.0;
}

/// Whether an action of kind `op` sends a gradient to the stage before (B, I).
constexpr bool sends_gradient(Op op) { return op == Op::backward || op == Op::input_gradient; }

/// One action of one micro-batch (or, a sync or step, of none) on one chunk of a device.
struct Action {
  Op op = Op::forward;
  std::size_t micro_batch = 0; ///< index into Schedule::micro_batch_sizes; 0 for a sync or step
  std::uint32_t size = 0;      ///< samples in that micro-batch; 0 for a sync or step
  std::uint32_t chunk = 0;     ///< which of the device's chunks (0 without chunks)
  friend bool operator==(const Action&, const Action&) = default;
};

/// Where the chunks of a pipeline's devices sit in the model.
enum class ChunkShape : std::uint8_t {
  /// Virtual stage c · devices + d on device d: the model goes down the devices
  /// `chunks` times (Megatron's interleaving).
  loop,
  /// Two chunks: virtual stage d on device d, and virtual stage 2 · devices − 1 − d:
  /// down the devices and back up, so the last device runs two virtual stages in a row
  /// and the first device holds the first and the last (ZB-V, DualPipeV).
  v
};

/// How many pieces of the model a schedule puts on each device of a pipeline, and
/// where they sit: what the planner asks a scheduler before it cuts the model, into
/// devices × chunks stages.
struct Chunking {
  std::uint32_t chunks = 1;
  ChunkShape shape = ChunkShape::loop;
};

/// The device and chunk of a virtual stage.
struct ChunkPlace {
  std::size_t stage = 0; ///< device of the pipeline (index into Schedule::stages)
  std::uint32_t chunk = 0;
  friend bool operator==(const ChunkPlace&, const ChunkPlace&) = default;
};

/// The actions of every device of one pipeline, device 0 first.
struct ACTORPIPE_EXPORT Schedule {
  std::string name;
  /// Samples in each micro-batch of one pipeline's share of the batch, in feeding order.
  std::vector<std::uint32_t> micro_batch_sizes;
  /// One list per device of the pipeline; without chunks, per stage.
  std::vector<std::vector<Action>> stages;
  std::uint32_t chunks = 1; ///< pieces of the model on each device
  ChunkShape shape = ChunkShape::loop;

  std::uint64_t samples() const;
  /// Devices × chunks: the stages of a plan that runs this schedule.
  std::size_t virtual_stages() const { return stages.size() * chunks; }
  /// The virtual stage that `chunk` of device `stage` holds.
  std::size_t virtual_stage(std::size_t stage, std::uint32_t chunk) const;
  /// The device and chunk of virtual stage `v` (< virtual_stages()).
  ChunkPlace place_of(std::size_t v) const;
  /// Whether what virtual stage `v` sends to v + 1 leaves its device (not so at a V's
  /// turn, where both are chunks of the last device).
  bool crosses_devices(std::size_t v) const { return place_of(v).stage != place_of(v + 1).stage; }
  /// Each virtual stage's own actions, in its device's order: what the stage actor
  /// for that piece of the model runs. Without chunks, `stages`.
  std::vector<std::vector<Action>> virtual_stage_actions() const;
  /// Whether the schedule places its stages' syncs and steps (every stage's, then).
  bool places_steps() const;
};

/// "F3", "B3", "I3", "W3", "sync" or "step": how actions are printed and written in
/// schedule files; "F3@1" and "sync@1" on chunk 1.
ACTORPIPE_EXPORT std::string to_string(const Action& action);

/// "loop" or "v", as schedule files write it; the shape named by `text`, if any.
ACTORPIPE_EXPORT const char* to_string(ChunkShape shape);
ACTORPIPE_EXPORT std::optional<ChunkShape> chunk_shape_named(std::string_view text);

/// Checks that the schedule can run: every virtual stage forwards every micro-batch
/// exactly once with its size, and then backwards it exactly once, whole (B) or in
/// halves (I, then W); where the schedule places syncs and steps, every virtual stage
/// has one sync after its last B or W and one step after it; every action's chunk
/// exists (a V has two); and executing the
/// devices' lists in order, each action's input can arrive (forward of k on virtual
/// stage v needs v−1's forward of k; B or I of k needs v+1's B or I of k; W needs
/// nothing from elsewhere). A schedule that would wait forever is reported as a
/// deadlock naming the devices and actions that wait.
ACTORPIPE_EXPORT Status validate(const Schedule& schedule);

/// Peak samples whose activations each virtual stage keeps between forward and
/// backward: from F until B, or until W (the weights' gradients need the activations
/// the input's do). Without chunks, per stage.
ACTORPIPE_EXPORT std::vector<std::uint64_t> peak_stashed_samples(const Schedule& schedule);

/// Each device's peak stash in samples of whole stages: the most, over its list, of
/// what its chunks hold together, each chunk counting 1/chunks of a stage (a chunk is
/// that share of the layers a stage of the same pipeline without chunks would hold).
/// Comparable across schedules with and without chunks.
ACTORPIPE_EXPORT std::vector<double> peak_stash_per_device(const Schedule& schedule);

} // namespace actorpipe
