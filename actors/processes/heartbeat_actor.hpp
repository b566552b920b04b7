#pragma once

/// The heartbeat actor, in the coordinator of a run of several processes: asks each
/// worker's stage host, about four times per timeout, whether it is there. A worker
/// that dies closes its connections and its stages' links say so at once; one that
/// hangs (stopped, swapping, deadlocked in its event loop) keeps them open, and only
/// its silence tells. A host that leaves a heartbeat unanswered for the timeout fails
/// the run, named with the stages it runs; so does one that answers that a stage of its
/// has spent `stall_timeout` on one piece of its work (its thread stuck while the process is
/// fine).

#include "failure.hpp"
#include "protocol.hpp"
#include "processes/process_protocol.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace actorpipe::actors {

struct HeartbeatConfig {
  std::map<std::uint64_t, stage_host_actor> hosts; ///< by rank
  std::map<std::uint64_t, std::string> names;      ///< by rank: "worker process 2 (stage 1 of pipeline 0)"
  std::chrono::milliseconds timeout{3000};
  std::chrono::milliseconds stall_timeout{0}; ///< 0: no limit
  job_actor job;                              ///< told of a silent host
  std::shared_ptr<Failure> failure;           ///< marked: a worker was lost
};

using heartbeat_actor = caf::typed_actor<caf::reacts_to<tick_atom>>;

heartbeat_actor spawn_heartbeat(caf::actor_system& system, HeartbeatConfig config);

} // namespace actorpipe::actors
