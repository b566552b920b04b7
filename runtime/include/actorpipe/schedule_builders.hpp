#pragma once

/// The classic synchronous schedules as functions of stage count and micro-batch sizes,
/// shared by the scheduler plugins (which choose among them and their parameters), the
/// partitioners that simulate candidate cuts, and tests.

#include <actorpipe/export.hpp>
#include <actorpipe/schedule.hpp>

#include <string>
#include <vector>

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

/// ZB-H1 (Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024): 1F1B's order with
/// each B split into I and W, I where B was, and stage s deferring up to s Ws, each run
/// once a further one waits. 1F1B holds stages − s micro-batches on stage s: with its s
/// deferred Ws, every stage holds at most stage 0's stages, 1F1B's peak. The deferred
/// Ws fill the time 1F1B's stages spend waiting for gradients: with F, I and W alike
/// the bubble is a third of 1F1B's.
ACTORPIPE_EXPORT Schedule zb_h1_schedule(std::size_t stages, const std::vector<std::uint32_t>& micro_batch_sizes);

/// Interleaved 1F1B (Megatron-LM's virtual pipeline stages): each device holds
/// `chunks` pieces of the model in a loop (ChunkShape::loop). Every device takes the
/// micro-batches in groups of `stages` (where the count is not a multiple, in as many
/// groups as fit, the first ones a micro-batch bigger): a group's forwards on chunk 0,
/// then chunk 1, …, its backwards from the last chunk down. Device d warms up with
/// 2 (stages − d − 1) + (chunks − 1) · (the first group's size) forwards, then
/// alternates one forward and one backward (a backward after its own forward), then
/// drains. The bubble is 1F1B's over `chunks`, for chunks times the sends.
ACTORPIPE_EXPORT Schedule interleaved_one_f_one_b_schedule(std::size_t stages,
                                                           const std::vector<std::uint32_t>& micro_batch_sizes,
                                                           std::uint32_t chunks);

/// What each stage's actions take, per sample, where a builder plays them out: the
/// forward, the whole backward (I takes input_gradient_share of it, W the rest) and the
/// send from stage s to s + 1; with chunks, per virtual stage and per boundary between
/// virtual stages. Empty: a forward 1 and a backward 2 on every stage (each chunk its
/// share of that), half of it the I, so that F, I and W are alike, and sends that take
/// no time.
struct StageTimes {
  std::vector<double> forward_ms;
  std::vector<double> backward_ms;
  std::vector<double> send_ms;                ///< one fewer than the (virtual) stages
  std::vector<double> input_gradient_share{}; ///< of each backward, the I's
};

/// Zero bubble played out greedily with the stages' `times`: each device runs, whenever
/// it is free, the I whose gradient has arrived (on the critical path; the earliest
/// micro-batch first, then the chunk deepest in the model), else the next forward
/// whose input has arrived (the deepest chunk first) if the device then holds at most
/// `limit` reference (largest) micro-batches of a whole stage (a chunk's counting its
/// share), else the oldest W it deferred, else waits. With limit 2 · stages − 1 it is
/// ZB-H2's shape: forwards run ahead into the warm-up and the sends, at up to twice
/// 1F1B's activations. With `chunking`, devices hold chunks.
ACTORPIPE_EXPORT Schedule zero_bubble_schedule(std::string name, std::size_t stages,
                                               const std::vector<std::uint32_t>& micro_batch_sizes, std::size_t limit,
                                               const StageTimes& times = {}, Chunking chunking = {});

/// ZB-V (Qi et al., 2024): two chunks per device in a V (ChunkShape::v), so device 0
/// holds the first and the last piece of the model and the last device turns the
/// forward round without a send; zero bubble played out as above within 1F1B's peak
/// stash (`stages` micro-batches of a whole stage).
ACTORPIPE_EXPORT Schedule zbv_schedule(std::size_t stages, const std::vector<std::uint32_t>& micro_batch_sizes,
                                       const StageTimes& times = {});

} // namespace actorpipe
