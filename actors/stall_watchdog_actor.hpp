#pragma once

/// The stall watchdog of the process that runs a job's stages itself (`actorpipe run`):
/// looks at its stages' activity (stage_activity.hpp) four times per limit (every 10 ms
/// at most), and fails the run when one has spent the limit on one piece of its own
/// work, its thread stuck. Nothing else would: the stuck stage never answers, and the
/// others wait for it without end. Stages in worker processes are watched through their
/// hosts' heartbeats (heartbeat_actor.hpp).

#include "failure.hpp"
#include "protocol.hpp"
#include "stage_activity.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace actorpipe::actors {

struct StallWatchdogConfig {
  std::vector<const StageActivity*> stages; ///< this process's
  std::chrono::milliseconds limit{600000};  ///< > 0
  job_actor job;                            ///< told of a stuck stage
  std::shared_ptr<Failure> failure;         ///< marked: a stage's thread is stuck
};

using stall_watchdog_actor = caf::typed_actor<caf::reacts_to<tick_atom>>;

stall_watchdog_actor spawn_stall_watchdog(caf::actor_system& system, StallWatchdogConfig config);

} // namespace actorpipe::actors
