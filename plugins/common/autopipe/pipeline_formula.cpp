/// PipelineFormula: one pipeline's iteration in closed form (pipeline_formula.hpp).

#include "common/autopipe/pipeline_formula.hpp"

#include <algorithm>

namespace actorpipe::autopipe {

PipelineFormula::PipelineFormula(const partitioning::UnitCosts& costs, const IterationModel& model, std::size_t stages,
                                 std::size_t micro_batches, bool gpipe, double action_overhead_ms)
    : costs_(costs), model_(model), micro_batches_(std::max<std::size_t>(micro_batches, 1)), gpipe_(gpipe),
      overhead_(action_overhead_ms) {
  const std::size_t S = stages;
  slowness_.resize(S);
  ms_per_byte_.assign(S, 0.0);
  latency_ms_.assign(S, 0.0);
  for (std::size_t s = 0; s < S; ++s) {
    slowness_[s] = 1.0 / model.stage_speed(s);
    if (s + 1 < S) ms_per_byte_[s] = model.cut_ms_per_byte(s), latency_ms_[s] = model.cut_latency_ms(s);
  }
  f_.resize(S);
  b_.resize(S);
  c_.resize(S);
  sync_.resize(S);
  held_.assign(S, {0, 0});
}

double PipelineFormula::time(const std::vector<std::size_t>& b) const {
  const std::size_t S = slowness_.size();
  const double m = static_cast<double>(micro_batches_);
  double fill = 0, slowest_pair = 0, slowest_forward = 0, slowest_backward = 0, slowest_cut = 0;
  for (std::size_t s = 0; s < S; ++s) {
    if (held_[s] != std::pair{b[s], b[s + 1]}) {
      held_[s] = {b[s], b[s + 1]};
      f_[s] = costs_.forward_ms(b[s], b[s + 1]) * slowness_[s] + overhead_;
      b_[s] = costs_.backward_ms(b[s], b[s + 1]) * slowness_[s] + overhead_;
      c_[s] = s + 1 < S ? costs_.boundary_bytes(b[s + 1]) * ms_per_byte_[s] + latency_ms_[s] : 0.0;
      sync_[s] = model_.sync_ms(s, costs_.parameter_bytes(b[s], b[s + 1]));
    }
    fill += f_[s] + b_[s] + 2 * c_[s];
    slowest_pair = std::max(slowest_pair, f_[s] + b_[s]);
    slowest_forward = std::max(slowest_forward, f_[s]);
    slowest_backward = std::max(slowest_backward, b_[s]);
    slowest_cut = std::max(slowest_cut, c_[s]);
  }
  double pipeline = fill;
  if (gpipe_) {
    pipeline += (m - 1) * (std::max(slowest_forward, slowest_cut) + std::max(slowest_backward, slowest_cut));
  } else {
    // The loops from each stage to the last and back, shared among its micro-batches in
    // flight: summed from the last stage forwards.
    double period = std::max(slowest_pair, slowest_cut), loop = 0;
    // A device's link out carries its activations forward and its gradients back.
    for (std::size_t s = 1; s < S; ++s)
      period = std::max(period, c_[s - 1] + c_[s]);
    for (std::size_t s = S; s-- > 0;) {
      loop += f_[s] + b_[s] + (s + 1 < S ? 2 * c_[s] : 0.0);
      const double held = static_cast<double>(S - s);
      if (m > held) period = std::max(period, loop / held);
    }
    pipeline += (m - 1) * period;
  }
  // Stage s's last backward ends the backwards and cuts before it earlier than stage 0's.
  double end = 0, before = 0;
  for (std::size_t s = 0; s < S; ++s) {
    end = std::max(end, pipeline - before + sync_[s]);
    before += b_[s] + c_[s];
  }
  return end;
}

} // namespace actorpipe::autopipe
