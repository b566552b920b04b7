#include "sim/stage_figures.hpp"

#include <algorithm>

namespace actorpipe {

std::vector<StageFigures> stage_figures(const ModelProfile& profile, const std::vector<Cut>& cuts) {
  const std::vector<Unit> units = profile.units(true);
  const double per_sample = 1.0 / profile.batch_size;
  std::vector<StageFigures> out(cuts.empty() ? 0 : cuts.size() - 1);
  std::size_t u = 0;
  for (std::size_t s = 0; s < out.size(); ++s) {
    StageFigures& f = out[s];
    // Cuts fall between units, so each unit lies wholly in one stage.
    for (; u < units.size() && units[u].begin < cuts[s + 1]; ++u) {
      f.forward_ms += (units[u].forward_ms - units[u].forward_fixed_ms) * per_sample;
      f.backward_ms += (units[u].backward_ms - units[u].backward_fixed_ms) * per_sample;
      f.forward_fixed_ms += units[u].forward_fixed_ms;
      f.backward_fixed_ms += units[u].backward_fixed_ms;
      f.parameter_bytes += units[u].parameter_bytes;
      f.stash_bytes_per_sample += units[u].stash_bytes_per_sample;
      f.workspace_bytes_per_sample = std::max(f.workspace_bytes_per_sample, units[u].workspace_bytes_per_sample);
      f.output_bytes = static_cast<double>(units[u].output_bytes) * per_sample;
    }
  }
  return out;
}

} // namespace actorpipe
