#pragma once

/// The schedule IR: what each stage does, in order, during one iteration.
///
/// A schedule is data, so it can be printed, loaded (schedule_io.hpp), validated and
/// simulated before a stage actor executes it. Every pipeline of a plan runs the same
/// schedule; its micro-batches may differ in size (sliced schedules split the first
/// ones into smaller slices).

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe {

/// What an action computes. A backward is either whole (B) or split in two halves
/// (zero-bubble schedules): I, the gradient of the stage's input, which the stage
/// before waits for, and W, the gradients of its weights, which nobody waits for and a
/// schedule may defer into time the stage would otherwise wait.
enum class Op : std::uint8_t {
  forward,        ///< F
  backward,       ///< B: I and W at once
  input_gradient, ///< I: the input's gradient only, sent on to the stage before
  weight_gradient ///< W: the weights' gradients of a micro-batch whose I has run
};

/// The share of a whole backward's time that I takes (W takes the rest), wherever a
/// profile gives the backward whole: as Zero Bubble Pipeline Parallelism (Qi et al.,
/// 2024) counts it, about half.
inline constexpr double input_gradient_share = 0.5;

/// The share of a stage's backward time that an action of kind `op` takes: 1 for B,
/// input_gradient_share for I, the rest for W; 0 for F, which has a time of its own.
constexpr double backward_share(Op op) {
  switch (op) {
  case Op::backward: return 1.0;
  case Op::input_gradient: return input_gradient_share;
  case Op::weight_gradient: return 1.0 - input_gradient_share;
  case Op::forward: break;
  }
  return 0.0;
}

/// Whether an action of kind `op` sends a gradient to the stage before (B, I).
constexpr bool sends_gradient(Op op) { return op == Op::backward || op == Op::input_gradient; }

/// One action of one micro-batch on one stage.
struct Action {
  Op op = Op::forward;
  std::size_t micro_batch = 0; ///< index into Schedule::micro_batch_sizes
  std::uint32_t size = 0;      ///< samples in that micro-batch
  friend bool operator==(const Action&, const Action&) = default;
};

/// The actions of every stage of one pipeline, stage 0 first.
struct ACTORPIPE_EXPORT Schedule {
  std::string name;
  /// Samples in each micro-batch of one pipeline's share of the batch, in feeding order.
  std::vector<std::uint32_t> micro_batch_sizes;
  std::vector<std::vector<Action>> stages;

  std::uint64_t samples() const;
};

/// "F3", "B3", "I3" or "W3": how actions are printed and written in schedule files.
ACTORPIPE_EXPORT std::string to_string(const Action& action);

/// Checks that the schedule can run: every stage forwards every micro-batch exactly
/// once with its size, and then backwards it exactly once, whole (B) or in halves (I,
/// then W); and executing the stages' lists in order, each action's input can arrive
/// (forward of k on stage s needs stage s−1's forward of k; B or I of k needs stage
/// s+1's B or I of k; W needs nothing from elsewhere). A schedule that would wait
/// forever is reported as a deadlock naming the stages and actions that wait.
ACTORPIPE_EXPORT Status validate(const Schedule& schedule);

/// Peak samples whose activations a stage keeps between forward and backward: from F
/// until B, or until W (the weights' gradients need the activations the input's do).
ACTORPIPE_EXPORT std::vector<std::uint64_t> peak_stashed_samples(const Schedule& schedule);

} // namespace actorpipe
