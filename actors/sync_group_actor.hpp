#pragma once

/// The sync-group actor of one stage index: once every pipeline's replica of the stage
/// has its gradients for the step, has them reduced and lets the replicas step. It
/// watches its members: one that ends before the run does is reported to the job, and
/// the survivors are never released on a partial reduction. (Other sync policies will
/// decide here whom to average with.)

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace actorpipe::actors {

struct SyncGroupConfig {
  std::size_t stage = 0;
  /// Replaces the replicas' gradients by their reduction (train::sum_gradients in a
  /// run); called once per step, after every replica's gradients have arrived.
  std::function<void()> reduce;
  /// Pipeline p's replica of the stage.
  std::vector<stage_actor> members;
  job_actor job;
  bool detached = true; ///< a thread of its own (it computes); false: on the scheduler
};

sync_group_actor spawn_sync_group(caf::actor_system& system, SyncGroupConfig config);

} // namespace actorpipe::actors
