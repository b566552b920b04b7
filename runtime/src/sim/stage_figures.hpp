#pragma once

/// What each stage of a partition costs on the profile's reference device (per sample,
/// and per micro-batch for the fixed parts): the figures the simulator, the planner and
/// schedulers start from.

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/recompute.hpp>

#include <cstdint>
#include <vector>

namespace actorpipe {

/// `cuts` as in Partition: stages + 1 cuts from {0, 0} to the model's end. With
/// `recompute` (by stage; missing: none), a stage's recomputed units cost their forward
/// again in its backward, stash their input instead of their activations, and need one
/// micro-batch's activations of them as workspace while it runs its backward.
std::vector<StageFigures> stage_figures(const ModelProfile& profile, const std::vector<Cut>& cuts,
                                        const std::vector<Recompute>& recompute = {});

} // namespace actorpipe
