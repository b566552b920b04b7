/// PipelineFormula: one pipeline's iteration in closed form (pipeline_formula.hpp).

#include "common/autopipe/pipeline_formula.hpp"

#include <algorithm>
#include <iterator>

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
  pace_forward_.resize(S);
  pace_backward_.resize(S);
}

double PipelineFormula::slowest_stage_path(double m, double fill) const {
  constexpr double share[] = {1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4}; // of a loop d stages on, per micro-batch
  static_assert(std::size(share) > window_stages);
  const std::size_t S = c_.size(); // c_[S − 1] is 0: no cut after the last stage
  double around = fill;            // Σ_{s < k} (f_s + b_s + 2 c_s): the way to stage k and back
  double slowest = 0, loop = 0;    // loop: stage k's f + b and its loop
  for (std::size_t k = S; k-- > 0;) {
    const double f = f_[k], b = b_[k], pair = f + b;
    around -= pair + 2 * c_[k];
    const double after = loop + 2 * c_[k]; // over the cut after k, through the stages after, and back
    loop = pair + after;
    const double held = static_cast<double>(std::min<std::size_t>(S - k, static_cast<std::size_t>(m)));
    double period = std::max(pair, (k > 0 ? c_[k - 1] : 0.0) + c_[k]);
    double window = pair; // the loop from stage k to stage k + d and back
    for (std::size_t d = 1; d <= window_stages && k + d < S; ++d) {
      window += 2 * c_[k + d - 1] + f_[k + d] + b_[k + d];
      period = std::max(period, window * share[d]);
    }
    const double forward = std::max({f, c_[k], pace_forward_[k]}), backward = std::max(b, pace_backward_[k]);
    double path; // from stage k's first forward to its last gradient's return to stage 0
    if (m > held && loop > period * held) {
      path = pair + (m - 1) * loop / held + after;
    } else if (m > held) {
      const double last_forward_end = std::max(f + (held - 1) * forward, f + after) + (m - held) * period;
      path = last_forward_end + b + std::max((held - 1) * backward, after);
    } else {
      const double last_forward_end = f + (m - 1) * forward;
      const double first_backward = std::max(last_forward_end, f + after);
      path = std::max(first_backward + b + (m - 1) * backward, last_forward_end + after + b);
    }
    slowest = std::max(slowest, around + path);
  }
  return slowest;
}

double PipelineFormula::time(const std::vector<std::size_t>& b) const {
  const std::size_t S = slowness_.size();
  const double m = static_cast<double>(micro_batches_);
  double fill = 0, slowest_forward = 0, slowest_backward = 0, slowest_cut = 0;
  for (std::size_t s = 0; s < S; ++s) {
    if (held_[s] != std::pair{b[s], b[s + 1]}) {
      held_[s] = {b[s], b[s + 1]};
      f_[s] = costs_.forward_ms(b[s], b[s + 1]) * slowness_[s] + overhead_;
      b_[s] = costs_.backward_ms(b[s], b[s + 1]) * slowness_[s] + overhead_;
      c_[s] = s + 1 < S ? costs_.boundary_bytes(b[s + 1]) * ms_per_byte_[s] + latency_ms_[s] : 0.0;
      sync_[s] = model_.sync_ms(s, costs_.parameter_bytes(b[s], b[s + 1]));
    }
    fill += f_[s] + b_[s] + 2 * c_[s];
    pace_forward_[s] = s == 0 ? 0.0 : std::max({pace_forward_[s - 1], f_[s - 1], c_[s - 1]});
    pace_backward_[s] = s == 0 ? 0.0 : std::max({pace_backward_[s - 1], b_[s - 1], c_[s - 1]});
    slowest_forward = std::max(slowest_forward, f_[s]);
    slowest_backward = std::max(slowest_backward, b_[s]);
    slowest_cut = std::max(slowest_cut, c_[s]);
  }
  // The slowest cut carries every micro-batch both ways, one after another, and the
  // last one's round trip from it.
  const double pipeline =
      gpipe_ ? fill + (m - 1) * (std::max(slowest_forward, slowest_cut) + std::max(slowest_backward, slowest_cut))
             : std::max(fill + (m - 1) * slowest_cut, slowest_stage_path(m, fill));
  // Stage s's last backward ends the backwards and cuts before it earlier than stage 0's.
  double end = 0, before = 0;
  for (std::size_t s = 0; s < S; ++s) {
    end = std::max(end, pipeline - before + sync_[s]);
    before += b_[s] + c_[s];
  }
  return end;
}

} // namespace actorpipe::autopipe
