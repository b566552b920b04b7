#pragma once

/// The averager actor (SDPipe's decentralised averaging, within one process): one per
/// stage index in a run with scheduled averaging. When the group scheduler forms a
/// group of that stage's replicas it tells the averager (`average`: the members and
/// each one's step), which turns the members' snapshots into their changes (through
/// `average`, train::SyncExecutor in a run) and releases each member (`synced`). The
/// members compute their next step meanwhile: the averaging waits for none of them,
/// and only they are averaged. In a run of several processes each process has an
/// averager per stage index it holds replicas of: the group scheduler tells every one
/// that holds a member of a group, they sum the group's snapshots across their
/// processes, and each releases its own members.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace actorpipe::actors {

struct AveragerConfig {
  std::size_t stage = 0;
  /// This stage index's actor in each pipeline: empty for those in other processes,
  /// which their own averagers release.
  std::vector<stage_actor> stages;
  /// Turns the snapshots of these pipelines' replicas into the changes that average them.
  std::function<void(const std::vector<std::size_t>& pipelines)> average;
  /// Told of a failure (where known: a worker's averager is made before the job), after
  /// which the averager ends with that error, which whoever watches it hears.
  job_actor job;
  bool detached = true; ///< a thread of its own (it computes); false for deterministic tests
};

averager_actor spawn_averager(caf::actor_system& system, AveragerConfig config);

/// Asynchronous elastic averaging in a run of several processes: the coordinator's
/// stand-in for a stage index's averager. Every process with replicas of the stage
/// keeps a copy of its centre, so each move a stage asks for goes to all of their
/// averagers (`averagers`), in the order the relay takes the asks: every copy moves
/// alike, and the averagers' sums across processes meet in one order.
averager_actor spawn_averager_relay(caf::actor_system& system, std::vector<averager_actor> averagers);

} // namespace actorpipe::actors
