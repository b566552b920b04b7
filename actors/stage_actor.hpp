#pragma once

/// The stage actor: runs one stage of one pipeline through its schedule, an action at
/// a time, as the inputs each action needs arrive.

#include "stage_trace.hpp"

#include <actorpipe/schedule.hpp>
#include <actorpipe/training.hpp>

#include <caf/fwd.hpp>

#include <optional>
#include <vector>

namespace actorpipe::train {
class StageWorker;
}

namespace actorpipe::actors {

struct StageConfig {
  train::StageWorker* worker = nullptr;
  std::vector<Action> actions; ///< this stage's part of the schedule, every step
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  std::size_t stages = 1;
  bool synchronised = false; ///< whether a sync group averages this stage's gradients
  std::uint64_t first_step = 1; ///< the run's number of the first step (> 1 after a resume)
  StageTrace* trace = nullptr;
  Clock::time_point origin;
  std::optional<InjectedFailure> inject_failure;
  /// A core shared with the pipeline neighbours (more stage actors than cores): the
  /// actor's thread is bound to it and, after each send, yields it to the neighbour that
  /// waits for exactly that message before going on (to its optimizer step, say), so a
  /// hand-off is a switch on one core. None: the operating system places the thread.
  std::optional<int> core;
};

/// Spawned detached (its own thread: it computes), bound to `config.core` on its first
/// message. Expects a `connect` message with (previous stage, next stage, pipeline, sync
/// group, job) before any input.
caf::actor spawn_stage(caf::actor_system& system, StageConfig config);

} // namespace actorpipe::actors
