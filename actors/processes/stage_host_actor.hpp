#pragma once

/// A worker process's stage host: spawns the stage actors that the plan's placement
/// gives its process (and, for a policy whose pipelines step on their own, its averager
/// or server copy of each stage index it holds), wires them as the coordinator's job
/// says (process_protocol.hpp), and hands the coordinator their state and spans.
/// Shutting it down shuts them all down.

#include "processes/process_protocol.hpp"

#include "launch/topology.hpp"
#include "run/run_setup.hpp"
#include "stage_activity.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace actorpipe::actors {

struct StageHostConfig {
  RunSetup* setup = nullptr; ///< this process's run: its job config makes the stages
  train::Session* session = nullptr;
  std::size_t rank = 0;
  launch::Topology topology; ///< where every stage of the run runs: this host's are those of `rank`
  transport::TensorTransport* transport = nullptr;
  std::vector<StageTrace>* traces = nullptr;       ///< p · S + s, as the job config's
  std::deque<StageActivity>* activities = nullptr; ///< likewise; none: nothing to watch
  /// The worker's log: as it spawns them, the host says what it runs.
  std::function<void(const std::string&)> say;
};

stage_host_actor spawn_stage_host(caf::actor_system& system, StageHostConfig config);

} // namespace actorpipe::actors
