#pragma once

/// What a model costs, block by block: the planner's and simulator's view of a DNN.
///
/// Times are milliseconds for one batch of `batch_size` samples on the reference
/// device; bytes are for the same batch unless a field says per sample.
///
/// Of each time, the `_fixed_ms` part is what any micro-batch pays whatever its size
/// (operator dispatch, allocation, small kernels): a micro-batch of n samples takes
/// forward_fixed_ms + (forward_ms − forward_fixed_ms) × n / batch_size. Scaling the
/// whole time by n / batch_size instead would make small micro-batches look cheaper
/// than they run.
///
/// A zero-bubble schedule runs a backward in two halves: I, the input's gradient, and
/// W, the weights'. `input_gradient_ms` is I's part of backward_ms (W has the rest),
/// as `actorpipe profile` measures it by running the halves apart; a profile that gives
/// the backward whole (PipeDream's, one written by hand) leaves it unset, and I then
/// counts for unmeasured_input_gradient_share of it.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/precision.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe {

/// The share of a backward that I takes where a profile does not say: as Zero Bubble
/// Pipeline Parallelism (Qi et al., 2024) counts it, half.
inline constexpr double unmeasured_input_gradient_share = 0.5;

/// I's part of a backward of `backward_ms`: `measured`, or the unmeasured share of it.
constexpr double input_gradient_part(const std::optional<double>& measured, double backward_ms) {
  return measured ? *measured : unmeasured_input_gradient_share * backward_ms;
}

/// A part of a block that a partitioner may cut at (a transformer layer's attention
/// or MLP half). Same units as Block.
struct SubBlock {
  std::string name;
  double forward_ms = 0;
  double backward_ms = 0;
  std::uint64_t output_bytes = 0; ///< activations leaving this sub-block
  std::uint64_t parameter_bytes = 0;
  std::uint64_t stash_bytes_per_sample = 0; ///< kept from forward until backward
  double forward_fixed_ms = 0;              ///< of forward_ms, the part every micro-batch pays
  double backward_fixed_ms = 0;
  /// Held only while its forward or backward runs, beyond what it keeps: gradients on
  /// their way back, temporaries, a library's scratch space.
  std::uint64_t workspace_bytes_per_sample = 0;
  std::optional<double> input_gradient_ms{}; ///< of backward_ms, the input's gradient (I)

  friend bool operator==(const SubBlock&, const SubBlock&) = default;
};

/// One block of the model, in execution order.
///
/// When a block has sub-blocks, its own figures are the sums of theirs and its
/// output is that of its last sub-block; validate() checks this.
struct Block {
  std::string name;
  double forward_ms = 0;
  double backward_ms = 0;
  std::uint64_t output_bytes = 0; ///< bytes crossing the cut after this block
  std::uint64_t parameter_bytes = 0;
  std::uint64_t stash_bytes_per_sample = 0;
  std::vector<SubBlock> sub_blocks;
  double forward_fixed_ms = 0;
  double backward_fixed_ms = 0;
  std::uint64_t workspace_bytes_per_sample = 0; ///< the most any of its parts holds
  std::optional<double> input_gradient_ms{};    ///< set where any of its parts' is

  /// Counts `sub`, the block's next part, into its figures: its times and bytes add
  /// up (its workspace is held one part at a time: the largest counts), and the block
  /// now ends where `sub` does. A profile reader and the profiler
  /// build a block from its parts this way, and validate() checks a block against it.
  void add(const SubBlock& sub) {
    if (input_gradient_ms || sub.input_gradient_ms)
      input_gradient_ms = input_gradient_part(input_gradient_ms, backward_ms) +
                          input_gradient_part(sub.input_gradient_ms, sub.backward_ms);
    forward_ms += sub.forward_ms;
    backward_ms += sub.backward_ms;
    forward_fixed_ms += sub.forward_fixed_ms;
    backward_fixed_ms += sub.backward_fixed_ms;
    parameter_bytes += sub.parameter_bytes;
    stash_bytes_per_sample += sub.stash_bytes_per_sample;
    workspace_bytes_per_sample = std::max(workspace_bytes_per_sample, sub.workspace_bytes_per_sample);
    output_bytes = sub.output_bytes;
  }

  friend bool operator==(const Block&, const Block&) = default;
};

/// A place the model can be cut: before sub-block `sub` of block `block`.
/// `sub == 0` is the boundary before the block; {blocks.size(), 0} is the end.
struct Cut {
  std::size_t block = 0;
  std::size_t sub = 0;
  friend bool operator==(const Cut&, const Cut&) = default;
  friend auto operator<=>(const Cut&, const Cut&) = default;
};

/// The smallest piece a partitioner works with: a whole block, or one sub-block.
struct Unit {
  Cut begin; ///< where the unit starts
  double forward_ms = 0;
  double backward_ms = 0;
  std::uint64_t output_bytes = 0;
  std::uint64_t parameter_bytes = 0;
  std::uint64_t stash_bytes_per_sample = 0;
  double forward_fixed_ms = 0;
  double backward_fixed_ms = 0;
  std::uint64_t workspace_bytes_per_sample = 0;
  std::optional<double> input_gradient_ms{};
};

struct ACTORPIPE_EXPORT ModelProfile {
  std::string name;
  std::string reference_device;  ///< where the times were measured
  std::uint32_t batch_size = 1;  ///< samples the times and activation bytes are for
  std::uint64_t input_bytes = 0; ///< bytes of one batch entering the first block
  /// What a measured profile's times and bytes were measured in (bf16 activations take
  /// half the bytes of fp32 ones); unset where the profile does not say (written by hand,
  /// imported), and then it stands for any precision.
  std::optional<Precision> precision;
  std::vector<Block> blocks;
  /// How a measured profile was measured (0 where unknown): the untimed passes it took
  /// for the times to settle (at the batch and at the smaller batch that splits off the
  /// fixed parts, together), and the spread of the batch's timed whole-model times,
  /// (slowest − fastest) / median. A spread above `wide_spread` means the machine's
  /// speed moved while measuring and plans made from it may mislead.
  std::uint32_t warmup_passes = 0;
  double spread = 0;
  static constexpr double wide_spread = 0.10;

  /// Checks every block: no negative or non-finite time, no fixed part or input
  /// gradient's part above its time,
  /// sub-blocks consistent with their block, at least one block. Messages name the block ("block 7 'conv3'").
  Status validate() const;

  /// The model as a sequence of units: every block, or its sub-blocks when
  /// `sub_blocks` is true and it has some.
  std::vector<Unit> units(bool sub_blocks) const;
  /// Calls `f(const Unit&)` on each of those units in order, building no vector.
  template <class F> void for_each_unit(bool sub_blocks, F&& f) const {
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const Block& block = blocks[b];
      if (!sub_blocks || block.sub_blocks.empty()) {
        f(Unit{{b, 0},
               block.forward_ms,
               block.backward_ms,
               block.output_bytes,
               block.parameter_bytes,
               block.stash_bytes_per_sample,
               block.forward_fixed_ms,
               block.backward_fixed_ms,
               block.workspace_bytes_per_sample,
               block.input_gradient_ms});
        continue;
      }
      for (std::size_t s = 0; s < block.sub_blocks.size(); ++s) {
        const SubBlock& sub = block.sub_blocks[s];
        f(Unit{{b, s},
               sub.forward_ms,
               sub.backward_ms,
               sub.output_bytes,
               sub.parameter_bytes,
               sub.stash_bytes_per_sample,
               sub.forward_fixed_ms,
               sub.backward_fixed_ms,
               sub.workspace_bytes_per_sample,
               sub.input_gradient_ms});
      }
    }
  }

  double total_forward_ms() const;
  double total_backward_ms() const;
  std::uint64_t total_parameter_bytes() const;
  bool has_sub_blocks() const;

  friend bool operator==(const ModelProfile&, const ModelProfile&) = default;
};

/// "block 7 'conv3'" or "block 7 'layer3' sub-block 1 'mlp'": how messages name a place.
ACTORPIPE_EXPORT std::string describe(const ModelProfile& profile, Cut at);

} // namespace actorpipe
