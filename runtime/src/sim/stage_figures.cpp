#include "sim/stage_figures.hpp"

#include <actorpipe/plan.hpp>

#include <algorithm>

namespace actorpipe {

std::vector<StageFigures> stage_figures(const ModelProfile& profile, const std::vector<Cut>& cuts,
                                        const std::vector<Recompute>& recompute) {
  const std::vector<Unit> units = profile.units(true);
  const double per_sample = 1.0 / profile.batch_size;
  std::vector<StageFigures> out(cuts.empty() ? 0 : cuts.size() - 1);
  std::size_t u = 0;
  for (std::size_t s = 0; s < out.size(); ++s) {
    StageFigures& f = out[s];
    const Recompute mode = s < recompute.size() ? recompute[s] : Recompute::none;
    const std::vector<bool> again = mode == Recompute::none
                                        ? std::vector<bool>{}
                                        : recomputed_units(profile, StagePlan{cuts[s], cuts[s + 1], {}, mode});
    // A run of recomputed units keeps its input instead of what it stashes, and makes
    // that again, one micro-batch at a time, before its backward.
    double run_stash = 0, largest_run = 0;
    // The stage's backward and its I's part, for one batch (a partitioner's UnitCosts
    // weighs them per micro-batch, alike but for the fixed parts): a recomputed forward
    // runs in the I (train/recomputation.cpp), which needs the activations first.
    double backward_batch_ms = 0, input_gradient_batch_ms = 0;
    // Cuts fall between units, so each unit lies wholly in one stage.
    for (std::size_t i = 0; u < units.size() && units[u].begin < cuts[s + 1]; ++u, ++i) {
      const Unit& unit = units[u];
      const double forward = (unit.forward_ms - unit.forward_fixed_ms) * per_sample;
      f.forward_ms += forward;
      f.backward_ms += (unit.backward_ms - unit.backward_fixed_ms) * per_sample;
      f.forward_fixed_ms += unit.forward_fixed_ms;
      f.backward_fixed_ms += unit.backward_fixed_ms;
      backward_batch_ms += unit.backward_ms;
      input_gradient_batch_ms += input_gradient_part(unit.input_gradient_ms, unit.backward_ms);
      f.parameter_bytes += unit.parameter_bytes;
      f.workspace_bytes_per_sample = std::max(f.workspace_bytes_per_sample, unit.workspace_bytes_per_sample);
      if (i < again.size() && again[i]) {
        f.backward_ms += forward;
        f.backward_fixed_ms += unit.forward_fixed_ms;
        backward_batch_ms += unit.forward_ms;
        input_gradient_batch_ms += unit.forward_ms;
        if (run_stash == 0) {
          const double input = u == 0 ? static_cast<double>(profile.input_bytes) * per_sample
                                      : static_cast<double>(units[u - 1].output_bytes) * per_sample;
          f.stash_bytes_per_sample += static_cast<std::uint64_t>(input);
        }
        run_stash += static_cast<double>(unit.stash_bytes_per_sample);
        largest_run = std::max(largest_run, run_stash);
      } else {
        f.stash_bytes_per_sample += unit.stash_bytes_per_sample;
        run_stash = 0;
      }
      f.output_bytes = static_cast<double>(unit.output_bytes) * per_sample;
    }
    f.workspace_bytes_per_sample += static_cast<std::uint64_t>(largest_run);
    if (backward_batch_ms > 0) f.input_gradient_share = input_gradient_batch_ms / backward_batch_ms;
  }
  return out;
}

} // namespace actorpipe
