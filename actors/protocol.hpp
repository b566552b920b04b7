#pragma once

/// The training actors' protocol: each actor's handle type lists the messages it takes,
/// so a message the receiver does not handle is a compile error, not a dropped message.
///
///   run ─step(n, batch)→ job ─step(n, share)→ pipeline
///   pipeline ─forward(n, micro, input)→ stage 0 ─forward→ … ─→ stage S−1
///            ─labels(n, micro, labels, scale)→ stage S−1
///   stage s ─backward(n, micro, gradient)→ stage s−1
///   the replica of stage s last to have its gradients of step n, having run the sync
///     policy's round (ReplicaBarrier) ─synced(n, stepped)→ the other replicas of stage s
///   stage ─done(n, stage, loss)→ pipeline, once it has stepped
///   stage ─failed(what)→ job
/// With chunks each chunk of a device is a stage (a virtual stage) and their actions
/// take turns in the device's order (device_turns.hpp):
///   chunk having acted ─turn→ the chunk of its device whose turn it is now
/// With an asynchronous policy each pipeline numbers its own steps. Under scheduled
/// averaging (SDPipe) a stage, having stepped, asks the group scheduler instead and
/// computes step n + 1 meanwhile:
///   stage s of pipeline p ─ask(s, p, n)→ group scheduler
///   job ─idle(p, has no work)→ group scheduler
///   group scheduler ─average(pipelines, their steps)→ stage s's averager, which
///     turns the group's snapshots into changes ─synced(n, true)→ each member; a member
///     alone gets ─synced(n, true)→ from the scheduler
///   stage ─done(n, stage, loss)→ pipeline, having asked; it adds the group's change
///     when step n + 1's actions end (at once if it is between steps)
/// Under asynchronous elastic averaging a stage asks its averager directly, every
/// `period` of its steps, and computes on meanwhile:
///   stage s of pipeline p ─average({p}, {n})→ stage s's averager, which moves the
///     snapshot and the centre towards each other ─synced(n, true)→ the stage
///   (in a run of several processes, the stage asks stage s's averager relay in the
///   coordinator, which passes each move, in the order the asks came, to the averager
///   of stage s in every process with replicas of it: the mover's process moves, the
///   others follow)
///   run ─settle→ job ─settle→ every stage, answered once it has no change to take:
///     before the run evaluates or saves the parameters
/// With a parameter server, a stage pushes after its backward, taking no step:
///   stage s of pipeline p ─ask(s, p, n)→ stage s's parameter server
///   job ─idle(p, has no work)→ every parameter server
///   parameter server, having stepped and the pushers pulled ─synced(n, true)→ each
///   (in a run of several processes, parameter server ─serve(pushes, answers)→ the
///   server copy of every process with replicas of the stage, which steps its copy
///   alike and ─synced(n, true)→ each of its own pushers)
///
/// `n` is the run's step number: the run queues the steps after n while step n runs
/// (one ahead in one process, two across processes, two per pipeline when pipelines
/// step on their own: run_training.cpp), so a stage may hold inputs of several. Tensors travel as Payload handles
/// within the job actor, and from the job to its pipelines, from a pipeline to its stages and between stages as Parcels
/// (parcel.hpp): between actors of one process a pointer, never a copy; to another process, a ticket for bytes that
/// c10d carries, or which rows of a batch they are.

#include "parcel.hpp"
#include "train/payload.hpp"

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace actorpipe::actors {

class ReplicaBarrier;

using connect_atom = caf::atom_constant<caf::atom("connect")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using forward_atom = caf::atom_constant<caf::atom("forward")>;
using backward_atom = caf::atom_constant<caf::atom("backward")>;
using labels_atom = caf::atom_constant<caf::atom("labels")>;
using synced_atom = caf::atom_constant<caf::atom("synced")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using failed_atom = caf::atom_constant<caf::atom("failed")>;
using ask_atom = caf::atom_constant<caf::atom("ask")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using average_atom = caf::atom_constant<caf::atom("average")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using settle_atom = caf::atom_constant<caf::atom("settle")>;
using serve_atom = caf::atom_constant<caf::atom("serve")>;
using turn_atom = caf::atom_constant<caf::atom("turn")>;
using norm_atom = caf::atom_constant<caf::atom("norm")>;

/// Trains one step of the whole batch (job): (step, inputs, labels) → the mean loss
/// over those samples.
using step_signature = caf::replies_to<step_atom, std::uint64_t, train::Payload, train::Payload>::with<double>;

/// Trains a pipeline's share of a step, likewise. Parcels: a pipeline whose stages all
/// run in one worker process runs there too, and is sent which rows its share is.
using share_signature = caf::replies_to<step_atom, std::uint64_t, Parcel, Parcel>::with<double>;

/// Answers once no stage has an averaging to take (scheduled averaging; at once
/// otherwise): the run settles before it evaluates or saves the parameters.
using settle_signature = caf::replies_to<settle_atom>::with<bool>;

/// The job: steps of the whole batch; settling; the first failure any actor reports.
using job_actor = caf::typed_actor<step_signature, settle_signature, caf::reacts_to<failed_atom, std::string>>;

/// A pipeline: steps of its share; (step, stage, Σ loss × samples) from each stage once
/// it has stepped; under clipping (train.clip_norm), (step, Σ of its gradients'
/// squares) from each stage before it steps.
using pipeline_actor =
    caf::typed_actor<share_signature, caf::reacts_to<done_atom, std::uint64_t, std::uint64_t, double>,
                     caf::reacts_to<norm_atom, std::uint64_t, double>>;

/// The group scheduler (SDPipe): asks (stage, pipeline, that pipeline's step), a
/// pipeline's work running out or resuming (pipeline, idle), and its own timer (stage,
/// the timer's number).
using group_scheduler_actor = caf::typed_actor<caf::reacts_to<ask_atom, std::uint64_t, std::uint64_t, std::uint64_t>,
                                               caf::reacts_to<idle_atom, std::uint64_t, bool>,
                                               caf::reacts_to<tick_atom, std::uint64_t, std::uint64_t>>;

/// A stage index's averager (scheduled averaging): a group to average (its pipelines,
/// and each one's step).
using averager_actor =
    caf::typed_actor<caf::reacts_to<average_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>>>;

/// A stage index's parameter server: pushes (stage, pipeline, that pipeline's step) and
/// a pipeline's work running out or resuming (pipeline, idle).
using parameter_server_actor = caf::typed_actor<caf::reacts_to<ask_atom, std::uint64_t, std::uint64_t, std::uint64_t>,
                                                caf::reacts_to<idle_atom, std::uint64_t, bool>>;

/// A process's copy of a stage index's parameter server, in a run of several: the
/// server's decisions (the pipelines whose pushes to apply as one step; the pipelines
/// to answer, and the step each answer is for), applied to this process's copy of the
/// server's weights and answered to this process's stages.
using server_copy_actor = caf::typed_actor<
    caf::reacts_to<serve_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>, std::vector<std::uint64_t>>>;

struct StageLinks;

/// A stage: its links first, then inputs (step, micro-batch, payload), the last
/// stage's labels (with the loss scale), output gradients, and the release of a step's
/// sync by the replica that ran it, the parameter server or the averager (true: this
/// replica stepped or needs no step), settling, its device's turn passing to it
/// from another chunk (device_turns.hpp), and under clipping the norm of the model's
/// gradient of a step (step, norm) from its pipeline.
using stage_actor = caf::typed_actor<caf::reacts_to<connect_atom, StageLinks>, caf::reacts_to<turn_atom>,
                                     caf::reacts_to<forward_atom, std::uint64_t, std::uint64_t, Parcel>,
                                     caf::reacts_to<labels_atom, std::uint64_t, std::uint64_t, Parcel, double>,
                                     caf::reacts_to<backward_atom, std::uint64_t, std::uint64_t, Parcel>,
                                     caf::reacts_to<synced_atom, std::uint64_t, bool>,
                                     caf::reacts_to<norm_atom, std::uint64_t, double>, settle_signature>;

/// How a stage's step ends, one per sync mode (sync_mode.hpp chooses). Alone: its
/// optimizer step at once (a lone pipeline).
struct Alone {};
/// Lockstep: the round its replicas share, which runs the sync policy's round on the
/// last arrival; that one releases the others.
struct ReplicaRound {
  std::shared_ptr<ReplicaBarrier> barrier; ///< shared by the replicas of this stage index
  std::vector<stage_actor> replicas;       ///< this stage index's actor in each pipeline, this one's included
};
/// Scheduled averaging: its optimizer step, then an ask to the group scheduler.
struct GroupAsk {
  group_scheduler_actor scheduler;
};
/// Asynchronous elastic averaging: its optimizer step, then every period an ask to its
/// stage's averager.
struct ElasticAsk {
  averager_actor averager;
};
/// A parameter server: a push of its gradient; the server's weights come back.
struct ServerPush {
  parameter_server_actor server;
};
using StepEnd = std::variant<Alone, ReplicaRound, GroupAsk, ElasticAsk, ServerPush>;

/// Whom a stage talks to, sent once before any input. The first stage has no
/// `previous`, the last no `next`.
struct StageLinks {
  stage_actor previous{};
  stage_actor next{};
  pipeline_actor pipeline{};
  job_actor job{};
  StepEnd step_end{};             ///< whom it meets at the end of each step
  Route to_previous{}, to_next{}; ///< how tensors reach them: within this process unless a rank is named
};

} // namespace actorpipe::actors

// Payloads and links stay inside one process; between processes a tensor is a Parcel's
// ticket, its bytes c10d's.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorpipe::train::Payload)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorpipe::actors::StageLinks)
