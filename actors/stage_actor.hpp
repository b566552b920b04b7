#pragma once

/// The stage actor: runs one stage of one pipeline through its schedule, an action at
/// a time, as the inputs each action needs arrive.

#include "stage_trace.hpp"

#include <actorpipe/schedule.hpp>
#include <actorpipe/training.hpp>

#include <caf/fwd.hpp>

#include <optional>

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
};

/// Spawned detached (its own thread: it computes). Expects a `connect` message with
/// (previous stage, next stage, pipeline, sync group, job) before any input.
caf::actor spawn_stage(caf::actor_system& system, StageConfig config);

} // namespace actorpipe::actors
