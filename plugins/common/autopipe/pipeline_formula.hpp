#pragma once

/// PipelineFormula: a closed-form estimate of one pipeline's iteration, in O(S) per
/// split whatever the micro-batch count: what a search can rank thousands of splits by
/// before the simulator (IterationModel) judges the last few.
///
/// Per micro-batch, stage s computes f_s forward and b_s backward on its device (with
/// the per-action overhead), and the cut after it carries c_s each way:
///   1F1B   the longest of the stages' paths, each stage k's made of: the first
///          micro-batch's way to it and the last one's back (Σ_{s < k} f_s + b_s + 2 c_s);
///          its warm-up forwards, no faster than the slowest forward or cut before it
///          delivers them; its first backward, no sooner than the first micro-batch's
///          loop from it to the last stage and back; a period per further micro-batch
///          (its f + b; its link out, which carries its activations forward and its
///          gradients back, c_{k−1} + c_k; or its loop to a stage d ≤ `window_stages`
///          on and back, which comes round every d + 1 micro-batches: two
///          neighbours of equal f + b, with a cut between them, take that cut longer
///          than either alone); its last backward, no sooner than the last
///          micro-batch's loop; and its last gradients drained back no faster than the
///          slowest backward or cut before it. Where its loop shared among the
///          micro-batches it holds in flight (min(S − k, m)) outlasts that period, it
///          waits on the loops in the steady state: the loop's share is the period, and
///          both loops are paid in full. A slow stage's warm-up and cool-down hide the
///          loops of the light stages after it, which a pipeline's plain fill and drain
///          would count. The slowest cut's path (every stage and cut once, and c per
///          further micro-batch) bounds it too;
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
/// (by up to 30% at 32 micro-batches near the balanced split, tests/plan_test.cpp),
/// and ranks such splits only roughly: the cut search ranks by it, and lets the
/// simulator choose among the best few.

#include "common/partitioning/unit_costs.hpp"

#include <actorpipe/iteration_model.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace actorpipe::autopipe {

/// How many stages on the shorter loops that pace a stage's steady state reach: a
/// few, so that an estimate stays O(S) (the loop to the last stage counts besides).
inline constexpr std::size_t window_stages = 3;

class PipelineFormula {
public:
  /// `model`'s placement has `stages` stages, one per device; `micro_batches` per
  /// pipeline; `gpipe`: all forwards before any backward, else 1F1B.
  PipelineFormula(const partitioning::UnitCosts& costs, const IterationModel& model, std::size_t stages,
                  std::size_t micro_batches, bool gpipe, double action_overhead_ms);

  /// The estimated iteration of the split at unit boundaries `b` (b[0] = 0, b[S] = N).
  double time(const std::vector<std::size_t>& b) const;

private:
  /// 1F1B: the longest of the stages' paths (the header's comment says which), with
  /// every stage and cut once taking `fill`.
  double slowest_stage_path(double m, double fill) const;

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
  /// Per stage k, the slowest forward and backward (or cut) before it: the pace at
  /// which its first micro-batches arrive and its last gradients drain.
  mutable std::vector<double> pace_forward_, pace_backward_;
};

} // namespace actorpipe::autopipe
