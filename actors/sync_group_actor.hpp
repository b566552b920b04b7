#pragma once

/// The sync-group actor of one stage index: once every pipeline's replica of the stage
/// has its gradients for the step, replaces them by their mean and lets the replicas
/// step. (Other sync policies will decide here whom to average with.)

#include <caf/fwd.hpp>

#include <vector>

namespace actorpipe::train {
class StageWorker;
}

namespace actorpipe::actors {

/// `replicas[p]` is pipeline p's worker of the stage, `stage_actors[p]` its actor.
caf::actor spawn_sync_group(caf::actor_system& system, std::vector<train::StageWorker*> replicas,
                            std::vector<caf::actor> stage_actors, caf::actor job);

} // namespace actorpipe::actors
