#pragma once

/// The steady state of a pipeline schedule, past the micro-batches that fill and drain
/// it: what the planner's estimate (IterationModel) adds for each micro-batch it does
/// not simulate, from the engine's model of the pipelines it does.

#include <actorpipe/schedule.hpp>

#include "sim/engine.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace actorpipe::sim {

class SteadyState {
public:
  /// Learns from the whole schedule what each virtual stage does per micro-batch and
  /// how many micro-batches it holds at once.
  explicit SteadyState(const Schedule& whole);

  /// Per micro-batch of `samples`, for `model`'s instances (their costs, routes and
  /// shares set): the most any processor computes and any lane carries; and per
  /// instance, its loop to the last stage and back (its F and the gradient it sends,
  /// the sends, the loop after it) per micro-batch in flight, with that count.
  struct Period {
    double processors = 0, lanes = 0;
    std::vector<std::pair<std::size_t, double>> loops;
    /// The slowest loop's time per micro-batch.
    double slowest_loop() const;
  };
  const Period& period_of(const Model& model, double samples);

  /// What the micro-batches after the first `simulated` of `all` add, `rest` giving
  /// their sizes and how many have each: each the period of processors and lanes; and
  /// a stage that holds t micro-batches in flight also waits, from its (t + 1)-th on,
  /// for its loop, per t. The simulated ones paced at most the first such micro-batches:
  /// the rest each add what the slowest loop takes beyond the processors and lanes.
  double extra_ms(const Model& model, std::size_t simulated, std::size_t all,
                  const std::vector<std::pair<std::uint32_t, std::size_t>>& rest);

private:
  std::vector<double> actions_per_micro_batch_; ///< per virtual stage: B, or I and W, and F
  std::vector<bool> input_gradient_sends_;      ///< per virtual stage: its I sends the gradient (else its B)
  std::vector<std::size_t> in_flight_;          ///< per virtual stage: the most micro-batches it holds
  std::vector<double> processor_ms_, lane_ms_;  ///< period_of()'s buffers
  Period period_;                               ///< period_of()'s answer
};

} // namespace actorpipe::sim
