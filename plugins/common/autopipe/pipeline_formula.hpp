#pragma once

/// PipelineFormula: a closed-form estimate of one pipeline's iteration, in O(S) per
/// split whatever the micro-batch count: what a search can rank thousands of splits by
/// before the simulator (IterationModel) judges the last few.
///
/// Per micro-batch, stage s computes f_s forward and b_s backward on its device (with
/// the per-action overhead), and the cut after it carries c_s each way:
///   1F1B   the first micro-batch's forward and the last one's backward cross every
///          stage and cut once, Σ (f_s + b_s) + 2 Σ c_s; each other micro-batch adds
///          the period P, the most of: the slowest stage's f + b, the slowest cut's c,
///          a device's link out, which carries its activations forward and its
///          gradients back (c_{s−1} + c_s), and, for each stage s that has more than
///          the S − s micro-batches it holds in flight, the loop from it to the last
///          stage and back shared among them;
///   GPipe  the forwards fill the pipeline and add the slowest forward or cut per
///          further micro-batch; then the backwards do the same.
/// Stage s's last backward ends Σ_{s' < s} (b_{s'} + c_{s'}) before stage 0's; its
/// all-reduce and optimizer step (IterationModel::sync_ms) follow, and the iteration
/// ends with the last of them: the later stages' rings run while the front computes.
/// Stage speeds, per-byte costs of cuts (each lane shared among the pipelines that
/// cross it) and rings are the model's; what it leaves out is queueing at shared lanes
/// beyond that share, which the simulator alone sees.
/// At one micro-batch on one pipeline it is the simulator's iteration. Beyond, it falls
/// short of it where stages of unequal speed stall one another in the steady state
/// (by up to half at 32 micro-batches near the balanced split, tests/plan_test.cpp),
/// and ranks such splits only roughly: the cut search ranks by it, and lets the
/// simulator choose among the best few.

#include "common/partitioning/unit_costs.hpp"

#include <actorpipe/iteration_model.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace actorpipe::autopipe {

class PipelineFormula {
public:
  /// `model`'s placement has `stages` stages, one per device; `micro_batches` per
  /// pipeline; `gpipe`: all forwards before any backward, else 1F1B.
  PipelineFormula(const partitioning::UnitCosts& costs, const IterationModel& model, std::size_t stages,
                  std::size_t micro_batches, bool gpipe, double action_overhead_ms);

  /// The estimated iteration of the split at unit boundaries `b` (b[0] = 0, b[S] = N).
  double time(const std::vector<std::size_t>& b) const;

private:
  const partitioning::UnitCosts& costs_;
  const IterationModel& model_;
  std::size_t micro_batches_;
  bool gpipe_;
  double overhead_;
  std::vector<double> slowness_, ms_per_byte_, latency_ms_; ///< per stage; the cut after it
  /// Of the split last estimated, per stage: a descent moves one cut at a time, so
  /// most stages keep their units [held_.first, held_.second) and these figures.
  mutable std::vector<double> f_, b_, c_, sync_;
  mutable std::vector<std::pair<std::size_t, std::size_t>> held_;
};

} // namespace actorpipe::autopipe
