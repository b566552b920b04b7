#pragma once

/// The job actor: builds the run's actors from a plan (a stage actor per pipeline ×
/// stage and a pipeline actor per pipeline, but for those worker processes spawned,
/// and with several pipelines a ReplicaBarrier per
/// stage index or, for an asynchronous policy, the group-scheduler actor with an
/// averager actor per stage index, or a parameter-server actor per stage index),
/// splits each batch into a share per pipeline and answers a step once all its shares
/// are done, and a settle once no stage has an averaging to take. Who takes which
/// share is the ShareDealer's (share_dealer.hpp). It watches
/// every actor it built: the first failure (an actor's report, or an actor that ended
/// abnormally) fails the step in progress with a message naming the stage and
/// micro-batch, so a run ends, it never hangs. Shutting the
/// job down shuts down all of them.

#include "device_turns.hpp"
#include "failure.hpp"
#include "injected_failure.hpp"
#include "pipeline_actor.hpp"
#include "processes/process_protocol.hpp"
#include "launch/topology.hpp"
#include "protocol.hpp"
#include "share_dealer.hpp"
#include "stage_actor.hpp"
#include "stage_trace.hpp"
#include "sync_mode.hpp"

#include <actorpipe/plan.hpp>
#include <actorpipe/plugin.hpp>

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <set>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::train {
class StageComputation;
}

namespace actorpipe::actors {

struct JobConfig {
  Plan plan;
  /// What stage s of pipeline p computes (a train::StageWorker in a run).
  std::function<train::StageComputation&(std::size_t pipeline, std::size_t stage)> computation;
  /// Runs stage s's sync round of a step on its replicas (train::SyncExecutor in a
  /// run); true when the replicas have stepped (the round, or step_ahead).
  std::function<bool(std::size_t stage, std::uint64_t step)> sync;
  /// Lockstep rounds: called by stage s of pipeline p before it arrives at its round of
  /// a step; true when it stepped that replica already (train::SyncExecutor's
  /// step_ahead() in a run). Unset: the round steps the replicas, or they step after it.
  std::function<bool(std::size_t stage, std::size_t pipeline, std::uint64_t step)> step_ahead;
  /// How the pipelines meet at the end of each step (sync_mode.hpp): lockstep rounds
  /// (`sync`), or on their own under scheduled averaging (the group scheduler groups the
  /// replicas that have stepped), asynchronous elastic averaging (every period of its
  /// steps a pipeline has each stage's averager move it and the centre towards each
  /// other: `average` of that pipeline alone) or a parameter server per stage index
  /// (`serve`). Those that do not step in lockstep step on the shares they are handed.
  SyncMode mode = Lockstep{};
  /// Averaging as they go (scheduled or elastic): stage s's replica of pipeline p keeps a
  /// snapshot as it asks, a group's snapshots become the changes that average them, and a
  /// replica adds its change (train::SyncExecutor's snapshot(), average(), correct() in
  /// a run).
  std::function<void(std::size_t stage, std::size_t pipeline)> snapshot;
  std::function<void(std::size_t stage, const std::vector<std::size_t>& pipelines)> average;
  std::function<void(std::size_t stage, std::size_t pipeline)> correct;
  /// Whether the pipelines step on their own, else in lockstep rounds.
  bool asynchronous() const { return actors::asynchronous(mode); }
  /// Stage s's server steps on these pipelines' replicas' gradients (each its share of
  /// a batch's), which take its weights (ParameterServer).
  std::function<void(std::size_t stage, const std::vector<std::size_t>& pushers)> serve;
  double time_scale = 1; ///< modelled ms per wall ms: the group scheduler's windows are modelled time
  /// Stage s of pipeline p on an emulated device: emulated[p][s] (empty: none is).
  std::vector<std::vector<std::optional<StageConfig::Emulated>>> emulated;
  std::uint64_t first_step = 1;              ///< the run's number of the first step (> 1 after a resume)
  bool clipping = false;                     ///< train.clip_norm: StageConfig::clipping
  Clock::time_point origin;                  ///< time zero of the trace
  std::vector<StageTrace>* traces = nullptr; ///< one per pipeline × stage (p · S + s); none: no trace
  /// Likewise, what a stage's thread is at (stage_activity.hpp), which this process's
  /// stall watchdog or a worker's stage host watches; none: nothing is.
  std::deque<StageActivity>* activities = nullptr;
  /// A stage that spends this long on one piece of its own work is taken for stuck
  /// (stage_activity.hpp): here it fails the run; in a worker, it loses the worker.
  /// 0: no limit.
  std::chrono::milliseconds stall_timeout{0};
  std::optional<InjectedFailure> inject_failure;
  bool pin_threads = true; ///< RunOptions::pin_threads
  /// Stage actors on threads of their own, as a run has them; false
  /// puts every actor on the scheduler, which the deterministic protocol tests step.
  bool detached = true;
  std::shared_ptr<Failure> failure;
  /// With chunks, the turns each device's chunks take (StageConfig::turns).
  std::shared_ptr<DeviceTurnsTable> device_turns = std::make_shared<DeviceTurnsTable>();
  /// Takes in tensors from stages in other processes (StageConfig::transport); none in
  /// a run of one process.
  transport::TensorTransport* transport = nullptr;
  /// A worker's: makes the rows of a batch parcels name (StageConfig::make_rows).
  RowMaker make_rows;
  /// A run of several processes, whose coordinator this job is: stage s of pipeline p
  /// runs in the process of rank ranks[p][s], 0 being this one; the others' stage
  /// hosts spawned theirs (stages[p][s]) and wire them as the job says.
  struct Processes {
    std::vector<std::vector<std::uint64_t>> ranks;
    std::vector<std::vector<stage_actor>> stages;
    std::map<std::uint64_t, stage_host_actor> hosts;
    /// A host silent this long is taken for lost (heartbeat_actor.hpp).
    std::chrono::milliseconds heartbeat_timeout{3000};
    /// Scheduled averaging: each host's averager of each stage index (empty where it
    /// holds no replica), by rank; the group scheduler tells them of groups.
    std::map<std::uint64_t, std::vector<averager_actor>> averagers;
    /// A parameter server: each host's copy of each stage's server, likewise.
    std::map<std::uint64_t, std::vector<server_copy_actor>> servers;
    /// The ranks whose processes have the same training data as this one
    /// (HostedStages::same_data): their pipelines' inputs and labels go as which rows
    /// of a batch they are, and they make them.
    std::set<std::uint64_t> same_data;
    /// By pipeline: the one a worker spawned, as it runs all its stages and makes its
    /// rows (HostedStages::pipelines); none: the job spawns it here.
    std::vector<pipeline_actor> pipelines;
  };
  std::optional<Processes> processes;

  /// Where every stage runs: in the processes' ranks, or all in this one (rank 0).
  launch::Topology topology() const;
};

job_actor spawn_job(caf::actor_system& system, JobConfig config);

/// How the job deals the shares of its steps under `config`'s policy.
ShareDealer share_dealer(const JobConfig& config, std::size_t pipelines);

/// The core each stage of process `rank` is bound to, by [pipeline][stage]: its stages
/// in `topology` share `usable` (train::usable_cores()) as train::stage_core() has them,
/// numbered in pipeline-major order among themselves; none without
/// JobConfig::pin_threads.
std::vector<std::vector<std::optional<int>>> stage_cores(const JobConfig& config, const launch::Topology& topology,
                                                         std::uint64_t rank, const std::vector<int>& usable);

/// What stage s of pipeline p is, in the run `config` describes, bound to `core`
/// (stage_cores()): the job builds its stages from it, and so does a worker process the
/// stages it hosts.
StageConfig stage_config(const JobConfig& config, std::size_t p, std::size_t s, std::optional<int> core);

/// What a pipeline over `stages` is, in the run `config` describes, with its inputs and
/// labels reaching its first and last stage as `to_first` and `to_last` say: the job
/// builds its pipelines from it, and so does a worker that runs all of a pipeline's
/// stages (which makes its rows: JobConfig::make_rows).
PipelineConfig pipeline_config(const JobConfig& config, std::vector<stage_actor> stages, Route to_first = {},
                               Route to_last = {});

} // namespace actorpipe::actors
