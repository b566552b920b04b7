#pragma once

/// The first failure of a run, shared by everything that may find one (the job actor,
/// the watchdogs, a lost worker's heartbeat) and read by the run after a step fails.

#include <mutex>
#include <string>

namespace actorpipe::actors {

struct Failure {
  std::mutex mutex;
  std::string what;
  /// A worker process was lost (its connection gone, or silent past the heartbeat
  /// timeout), rather than a stage failing: what a restart is for.
  bool worker_lost = false;
  /// A stage of this process is stuck at its work (stall_watchdog_actor.hpp): its thread
  /// never ends, so neither does its actor, and the run cannot wait for it.
  bool stage_stuck = false;
};

} // namespace actorpipe::actors
