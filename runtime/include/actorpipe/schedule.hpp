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

enum class Op : std::uint8_t { forward, backward };

/// Forward or backward of one micro-batch on one stage.
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

/// "F3" or "B3": how actions are printed and written in schedule files.
ACTORPIPE_EXPORT std::string to_string(const Action& action);

/// Checks that the schedule can run: every stage forwards and backwards every
/// micro-batch exactly once with its size, forward before backward, and executing the
/// stages' lists in order, each action's input can arrive (forward of k on stage s needs
/// stage s−1's forward of k; backward needs stage s+1's backward). A schedule that would
/// wait forever is reported as a deadlock naming the stages and actions that wait.
ACTORPIPE_EXPORT Status validate(const Schedule& schedule);

/// Peak samples whose activations a stage keeps between forward and backward.
ACTORPIPE_EXPORT std::vector<std::uint64_t> peak_stashed_samples(const Schedule& schedule);

} // namespace actorpipe
