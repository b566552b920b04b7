#pragma once

/// The averager actor (SDPipe's decentralised averaging, within one process): one per
/// stage index in a run with scheduled averaging. When the group scheduler forms a
/// group of that stage's replicas it tells the averager (`average`: the members and
/// each one's step), which turns the members' snapshots into their changes (through
/// `average`, train::SyncExecutor in a run) and releases each member (`synced`). The
/// members compute their next step meanwhile: the averaging waits for none of them,
/// and only they are averaged.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace actorpipe::actors {

struct AveragerConfig {
  std::size_t stage = 0;
  std::vector<stage_actor> stages; ///< this stage index's actor in each pipeline
  /// Turns the snapshots of these pipelines' replicas into the changes that average them.
  std::function<void(const std::vector<std::size_t>& pipelines)> average;
  job_actor job;        ///< told of a failure
  bool detached = true; ///< a thread of its own (it computes); false for deterministic tests
};

averager_actor spawn_averager(caf::actor_system& system, AveragerConfig config);

} // namespace actorpipe::actors
