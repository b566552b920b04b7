#pragma once

/// The parameter-server actor: one per stage index in a run with `parameter-server`.
/// It owns that stage's server weights (through `serve`, train::SyncExecutor in a
/// run): a stage that has run its step's backward pushes (`ask`, with no step of its
/// own); the actor, as its sync::ServerGate says, has the server step on the pushed
/// gradients and the pushers take its weights, then answers them (`synced`, stepped).
/// The job tells it which pipelines have no work, for whom no round or bound waits.
/// In a run of several processes it keeps the gate only: each process with replicas of
/// the stage keeps a copy of the server, which steps and answers as it says.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace actorpipe::actors {

struct ParameterServerConfig {
  std::size_t stage = 0;
  std::uint64_t staleness = 0;     ///< SyncRound::staleness
  std::vector<stage_actor> stages; ///< this stage index's actor in each pipeline
  /// Steps the server on these pipelines' replicas' gradients (each its share of a
  /// batch's), which then take its weights.
  std::function<void(const std::vector<std::size_t>& pushers)> serve;
  job_actor job;        ///< told of a failure
  bool detached = true; ///< a thread of its own (it computes); false for deterministic tests
  /// A run of several processes: the server copy of each process with replicas of the
  /// stage, which applies each decision and answers (server_copy_actor.hpp); `serve`
  /// is then unused. None: this actor serves and answers.
  std::vector<server_copy_actor> copies;
};

parameter_server_actor spawn_parameter_server(caf::actor_system& system, ParameterServerConfig config);

} // namespace actorpipe::actors
