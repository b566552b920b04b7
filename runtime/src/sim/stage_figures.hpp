#pragma once

/// What each stage of a partition costs, per sample on the profile's reference device:
/// the figures the simulator, the planner and schedulers start from.

#include <actorpipe/model_profile.hpp>

#include <cstdint>
#include <vector>

namespace actorpipe {

struct StageFigures {
  double forward_ms = 0;
  double backward_ms = 0;
  double output_bytes = 0; ///< activations leaving the stage
  std::uint64_t parameter_bytes = 0;
  std::uint64_t stash_bytes_per_sample = 0;
};

/// `cuts` as in Partition: stages + 1 cuts from {0, 0} to the model's end.
std::vector<StageFigures> stage_figures(const ModelProfile& profile, const std::vector<Cut>& cuts);

} // namespace actorpipe
