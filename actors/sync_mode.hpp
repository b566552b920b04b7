#pragma once

/// How a run's pipelines meet at the end of each step: one mode, chosen once where the
/// run is set up (from its sync policy's SyncRound), and the end of step it gives each
/// stage. Code that depends on the mode reads it here instead of inferring it from
/// which optional settings or links happen to be present.

#include "protocol.hpp"

#include <actorpipe/plugin.hpp>

#include <cstdint>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

namespace actorpipe::actors {

/// Every pipeline's step ends in its stages' rounds, which reduce or average the
/// replicas (SyncRound::Kind::gradients, parameters, and elastic in rounds).
struct Lockstep {};
/// SDPipe's: each pipeline steps on its own; the group scheduler groups the replicas
/// that have stepped, and a stage's averager averages each group.
struct ScheduledAveraging {
  GroupScheduling scheduling;
};
/// Asynchronous elastic averaging: every `period` of its steps, each stage of a pipeline
/// has its stage's averager move it and the centre towards each other.
struct ElasticAveraging {
  std::uint64_t period = 1;
};
/// A parameter server per stage index steps on the gradients its replicas push, at most
/// `staleness` steps behind the slowest.
struct ParameterServer {
  std::uint64_t staleness = 0;
};

using SyncMode = std::variant<Lockstep, ScheduledAveraging, ElasticAveraging, ParameterServer>;

/// Whether the pipelines step on their own: every mode but lockstep.
inline bool asynchronous(const SyncMode& mode) { return !std::holds_alternative<Lockstep>(mode); }

/// Whether replicas average as they go (scheduled or elastic): they keep snapshots as
/// they ask and add the changes their averager makes.
inline bool averaging(const SyncMode& mode) {
  return std::holds_alternative<ScheduledAveraging>(mode) || std::holds_alternative<ElasticAveraging>(mode);
}

/// The end of step `mode` gives a stage, from what its wiring has: the round its
/// replicas share (lockstep, several pipelines), the group scheduler, its averager or
/// its parameter server. Alone where the mode has nobody for it to meet (one pipeline).
inline StepEnd step_end(const SyncMode& mode, std::shared_ptr<ReplicaBarrier> round, std::vector<stage_actor> replicas,
                        group_scheduler_actor scheduler, averager_actor averager, parameter_server_actor server) {
  if (std::holds_alternative<Lockstep>(mode) && round) return ReplicaRound{std::move(round), std::move(replicas)};
  if (std::holds_alternative<ScheduledAveraging>(mode) && scheduler) return GroupAsk{std::move(scheduler)};
  if (std::holds_alternative<ElasticAveraging>(mode) && averager) return ElasticAsk{std::move(averager)};
  if (std::holds_alternative<ParameterServer>(mode) && server) return ServerPush{std::move(server)};
  return Alone{};
}

} // namespace actorpipe::actors
