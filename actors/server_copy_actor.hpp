#pragma once

/// A process's copy of one stage index's parameter server, in a run of several
/// processes with `parameter-server`. The coordinator's parameter-server actor keeps
/// the gate (which pushes to apply, whom to answer: sync::ServerGate) and sends every
/// decision to the copy of each process with replicas of the stage, in one order. Each
/// copy steps its weights on the pushes' gradients summed across the processes
/// (through `serve`, train::SyncExecutor in a run), so every copy steps alike; its
/// pushers take the weights, and it answers those of its process.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace actorpipe::actors {

struct ServerCopyConfig {
  std::size_t stage = 0;
  /// This stage index's actor in each pipeline: empty for those in other processes.
  std::vector<stage_actor> stages;
  /// Steps this process's copy on these pipelines' pushes (theirs summed across the
  /// processes); this process's pushers among them take its weights.
  std::function<void(const std::vector<std::size_t>& pushers)> serve;
  bool detached = true; ///< a thread of its own (it computes); false for deterministic tests
};

/// A failure (from the tensors) ends the copy with that error, which the job watching
/// it hears.
server_copy_actor spawn_server_copy(caf::actor_system& system, ServerCopyConfig config);

} // namespace actorpipe::actors
