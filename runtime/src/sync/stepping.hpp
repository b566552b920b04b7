#pragma once

/// Which sync rounds let pipelines step on their own: one rule for the run (which
/// asks round 0 and then never again) and the planner (which tells the simulator).

#include <actorpipe/plan.hpp>
#include <actorpipe/plugin.hpp>

namespace actorpipe::sync {

/// Kinds asked once, as round 0, whose pipelines then step on their own.
inline bool is_asynchronous(SyncRound::Kind kind) {
  return kind == SyncRound::Kind::scheduled_averaging || kind == SyncRound::Kind::parameter_server ||
         kind == SyncRound::Kind::elastic_asynchronous;
}

/// What the simulator needs of a policy whose round 0 is `round`.
inline SyncStepping stepping_of(const SyncRound& round) {
  SyncStepping stepping;
  stepping.asynchronous = is_asynchronous(round.kind);
  if (round.kind == SyncRound::Kind::parameter_server) stepping.staleness = round.staleness;
  return stepping;
}

} // namespace actorpipe::sync
