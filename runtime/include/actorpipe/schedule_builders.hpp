#pragma once

/// The classic synchronous schedules as functions of stage count and micro-batch sizes,
/// shared by the scheduler plugins (which choose among them and their parameters), the
/// partitioners that simulate candidate cuts, and tests.

#include <actorpipe/export.hpp>
#include <actorpipe/schedule.hpp>

namespace actorpipe {

/// GPipe: every stage runs all forwards, then all backwards in the same order.
ACTORPIPE_EXPORT Schedule gpipe_schedule(std::size_t stages, const std::vector<std::uint32_t>& micro_batch_sizes);

/// 1F1B (PipeDream-Flush, DAPPLE): stage s runs forwards until it holds the samples of
/// `stages − s` micro-batches of `reference_size` (warm-up), then alternates one forward
/// and one backward, then drains its backwards. Counting the warm-up in samples rather
/// than micro-batches keeps the activation bound of 1F1B when the first micro-batches
/// are sliced smaller. `reference_size` 0 means the largest micro-batch.
ACTORPIPE_EXPORT Schedule one_f_one_b_schedule(std::size_t stages, const std::vector<std::uint32_t>& micro_batch_sizes,
                                               std::uint32_t reference_size = 0);

/// Advance forward propagation (AvgPipe): 1F1B whose stage s may hold `ahead` more
/// reference micro-batches, `stages − s + ahead`, so that it runs that many forwards of
/// later micro-batches ahead, into time it would otherwise wait for a gradient. ahead 0
/// is 1F1B; ahead ≥ micro-batches − 1 is GPipe's order. docs/schedules.md.
ACTORPIPE_EXPORT Schedule advance_forward_schedule(std::size_t stages,
                                                   const std::vector<std::uint32_t>& micro_batch_sizes,
                                                   std::size_t ahead, std::uint32_t reference_size = 0);

} // namespace actorpipe
