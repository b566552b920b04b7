#pragma once

/// Which sync rounds let pipelines step on their own, and which let them clip their
/// gradient: one rule for the run (which asks round 0 and then never again) and the
/// planner (which tells the simulator).

#include <actorpipe/plan.hpp>
#include <actorpipe/plugin.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace actorpipe::sync {

/// Kinds asked once, as round 0, whose pipelines then step on their own.
inline bool is_asynchronous(SyncRound::Kind kind) {
  return kind == SyncRound::Kind::scheduled_averaging || kind == SyncRound::Kind::parameter_server ||
         kind == SyncRound::Kind::elastic_asynchronous;
}

/// Why clipping by the model's gradient norm (train.clip_norm) cannot run under a
/// policy whose rounds are of `kind`, over `pipelines` (0: not known yet); nothing where
/// it can. Clipping needs the one gradient every pipeline steps on, reduced before the
/// step: a lone pipeline's, or allreduce's.
inline std::optional<std::string> clipping_problem(double clip_norm, SyncRound::Kind kind, std::size_t pipelines) {
  if (clip_norm <= 0 || pipelines == 1 || kind == SyncRound::Kind::allreduce_gradients) return std::nullopt;
  return std::string("clipping by the model's gradient norm needs the pipelines' gradients reduced before they "
                     "step; under this sync policy each pipeline ") +
         (is_asynchronous(kind) ? "steps on its own" : "steps on its own gradient before the replicas average") +
         ": sync with allreduce, train one pipeline, or set clip_norm = 0";
}

/// What the simulator needs of a policy whose round 0 is `round`.
inline SyncStepping stepping_of(const SyncRound& round) {
  SyncStepping stepping;
  stepping.asynchronous = is_asynchronous(round.kind);
  if (round.kind == SyncRound::Kind::parameter_server) stepping.staleness = round.staleness;
  return stepping;
}

} // namespace actorpipe::sync
