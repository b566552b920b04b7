#pragma once

/// The messages between the processes of a run (CAF's middleman carries them; tensors
/// go through c10d as Parcels' tickets, parcel.hpp). The coordinator (rank 0) runs the
/// job actor; each worker process runs a stage host, which spawns the stage actors
/// the plan's placement gives it and wires them as the job says:
///
///   worker ─join(token, host name, pid)→ coordinator gate ─→ the JobOrder, its rank one
///     whose devices the cluster file puts on that host, or on any (or an error: a
///     wrong token is refused and logged with the worker's address; a host with no
///     place left is refused)
///   worker, having loaded the job, planned it alike and joined the tensor transport
///     ─ready(rank, host)→ gate
///   coordinator ─spawn→ host ─→ its stage actors, in (pipeline, stage) order; the
///     pipeline actor of each pipeline all of whose stages it runs, where it makes the
///     batches' rows (the job then sends it a step's share as rows, and hears back once
///     a step); and under scheduled or asynchronous elastic averaging its averager of each stage
///     index it holds replicas of (the coordinator's group scheduler tells them of the
///     groups with members there; its averager relay of a stage, of every elastic move);
///     with a parameter server, its copy of each stage's server (the coordinator's
///     server of the stage sends every copy each decision)
///   job ─wire(wirings)→ host, which connects each of its stages (StageLinks, made
///     there: routes to neighbours in other processes, a sync round over its replicas
///     of a stage index, which all-reduces across the processes) and answers; the job
///     holds the steps back until every host has, so that no input overtakes a
///     stage's links
///   coordinator ─restore(tickets)→ host, in a resumed run before the wiring: the state
///     bytes (parameters, buffers, optimizer state) of its stages, in spawn order, each
///     loaded into its stage ─→ true
///   coordinator ─collect(pipeline)→ host ─→ tickets of the state bytes of that
///     pipeline's stages it runs (evaluation and checkpoints read them)
///   coordinator ─trace→ host ─→ its stages' spans, at the end
///   heartbeat (coordinator) ─heartbeat→ host ─→ true, about four times per timeout: a
///     host silent for the timeout fails the run (a hung process keeps its
///     connections, so only silence tells it)
///   coordinator ─finish(failed)→ host, which ends its stages and itself once it has
///     answered; the worker process then ends (after a failure, without waiting for
///     tensors still in flight to peers that may be gone)

#include "protocol.hpp"
#include "stage_trace.hpp"

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe::actors {

using join_atom = caf::atom_constant<caf::atom("join")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using wire_atom = caf::atom_constant<caf::atom("wire")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using trace_atom = caf::atom_constant<caf::atom("trace")>;
using finish_atom = caf::atom_constant<caf::atom("finish")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;

/// What a worker needs to take part: the job as the coordinator loaded it (its file and
/// overrides, read on the worker's server too, and the profile it planned with), the
/// plan itself (planner/plan_wire.hpp) with its SHA-256 (the worker runs it as it
/// came, planning nothing), its rank, and where the tensor transport's store is.
struct JobOrder {
  std::string job_file;
  std::vector<std::string> overrides;
  std::string profile_toml;
  std::string plan;        ///< planner::plan_to_wire()
  std::string plan_sha256; ///< of `plan`
  std::uint64_t rank = 0, world = 0;
  std::string store_host;
  std::uint16_t store_port = 0;
  std::uint64_t first_step = 1;
  std::uint64_t total_steps = 0;                     ///< the run's last step, which the learning rate's schedule spans
  std::int64_t origin_ns = 0;                        ///< the coordinator's time zero (steady clock): one trace
  std::vector<std::vector<std::uint64_t>> placement; ///< [pipeline][stage]: the rank that runs it
  /// --inject-failure, for the workers' stages: stage, step (0: none), its effect
  /// (InjectedFailure::Effect).
  std::uint64_t inject_stage = 0, inject_step = 0;
  std::uint8_t inject_effect = 0;
  /// The coordinator's train::Session::data_fingerprint(): a worker whose data matches
  /// makes its pipelines' batches itself.
  std::uint64_t data_fingerprint = 0;
  /// RunOptions::pin_threads (`--no-pin`: false): whether a worker bound to cores binds
  /// its stage threads among them.
  bool pin_threads = true;
};

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, JobOrder& x) {
  return f(caf::meta::type_name("job_order"), x.job_file, x.overrides, x.profile_toml, x.plan, x.plan_sha256, x.rank,
           x.world, x.store_host, x.store_port, x.first_step, x.total_steps, x.origin_ns, x.placement, x.inject_stage,
           x.inject_step, x.inject_effect, x.data_fingerprint, x.pin_threads);
}

/// What a host spawned: its stage actors in (pipeline, stage) order and, under
/// scheduled or asynchronous elastic averaging, its averager of each stage index
/// (empty where it holds no replica of that stage).
struct HostedStages {
  std::vector<stage_actor> stages;
  std::vector<averager_actor> averagers;
  std::vector<server_copy_actor> servers; ///< with a parameter server: its copy of each stage's, likewise
  bool same_data = false;                 ///< its training data is the coordinator's (JobOrder::data_fingerprint)
  /// By pipeline: the pipeline actor of each pipeline whose stages all run here, where
  /// it makes its batches' rows (same_data); empty for the others.
  std::vector<pipeline_actor> pipelines;
};

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, HostedStages& x) {
  return f(caf::meta::type_name("hosted_stages"), x.stages, x.averagers, x.servers, x.same_data, x.pipelines);
}

/// How the job wires one stage a worker runs: its neighbours and the ranks of their
/// processes, its pipeline, the job; under scheduled averaging the group scheduler,
/// under asynchronous elastic averaging the coordinator's averager relay of its stage,
/// with a parameter server the coordinator's server of its stage.
struct StageWiring {
  std::uint64_t pipeline = 0, stage = 0;
  stage_actor previous, next;
  std::uint64_t previous_rank = 0, next_rank = 0;
  pipeline_actor owner;
  job_actor job;
  group_scheduler_actor scheduler;
  averager_actor averager;
  parameter_server_actor server;
};

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, StageWiring& x) {
  return f(caf::meta::type_name("stage_wiring"), x.pipeline, x.stage, x.previous, x.next, x.previous_rank, x.next_rank,
           x.owner, x.job, x.scheduler, x.averager, x.server);
}

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, TraceSpan& x) {
  return f(caf::meta::type_name("trace_span"), x.kind, x.step, x.micro_batch, x.start_us, x.duration_us, x.cpu_us);
}

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, StageTrace& x) {
  return f(caf::meta::type_name("stage_trace"), x.pipeline, x.stage, x.keep_steps, x.spans, x.peak_stashed);
}

/// A worker's stage host. A heartbeat carries the longest a stage may spend on one piece of its work
/// (ms; 0: no limit) and is answered with what is stuck past it, if anything (empty:
/// nothing).
using stage_host_actor = caf::typed_actor<
    caf::replies_to<spawn_atom>::with<HostedStages>, caf::replies_to<wire_atom, std::vector<StageWiring>>::with<bool>,
    caf::replies_to<restore_atom, std::vector<transport::TensorTicket>>::with<bool>,
    caf::replies_to<collect_atom, std::uint64_t>::with<std::vector<transport::TensorTicket>>,
    caf::replies_to<trace_atom>::with<std::vector<StageTrace>>, caf::replies_to<finish_atom, bool>::with<bool>,
    caf::replies_to<heartbeat_atom, std::uint64_t>::with<std::string>>;

/// The coordinator's gate: a worker's join (token, host name, process id), then its
/// ready (rank, stage host).
using gate_actor = caf::typed_actor<caf::replies_to<join_atom, std::string, std::string, std::uint32_t>::with<JobOrder>,
                                    caf::reacts_to<ready_atom, std::uint64_t, stage_host_actor>>;

/// Registers the types above (and parcels, tickets) with CAF, for a process of a run of
/// several.
void add_process_message_types(caf::actor_system_config& config);

} // namespace actorpipe::actors
