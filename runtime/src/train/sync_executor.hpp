#pragma once

/// What a sync policy's round does to a stage's replicas (actorpipe/plugin.hpp,
/// SyncRound), run by the replica whose gradients are ready last while the others wait
/// (actors/replica_barrier.hpp):
///   - allreduce_gradients: each group sums its gradients, scaled up to the whole
///     batch's; a pipeline in no group scales its own; every replica then steps itself;
///   - average_parameters: every replica steps on its own gradient (each on its own
///     thread, as it arrives: step_ahead()), then each group averages its parameters;
///   - elastic: every replica steps on its own gradient (step_ahead()), then each group
///     moves towards the stage's centre variable and the centre towards it;
///   - scheduled_averaging (asynchronous): no rounds; each pipeline steps on its own,
///     keeps a snapshot as it asks the group scheduler (snapshot()) and computes on;
///     a group's member turns the group's snapshots into changes (average()), which
///     each member adds at its next step's end (correct());
///   - parameter_server (asynchronous): no rounds; a stage's server actor has the
///     stage's server weights step on pushed gradients (serve());
///   - elastic_asynchronous: no rounds; every `period` of its steps a pipeline keeps a
///     snapshot (snapshot()) and the stage's averager moves it and the centre towards
///     each other (average() of that pipeline alone), the change added as above.
/// No LibTorch types show here.

#include "train/replica_sync.hpp"
#include "train/stage_worker.hpp"

#include <actorpipe/plugin.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::train {

class SyncExecutor {
public:
  /// `replicas(s)` gives stage s's replica of each pipeline; `batch_share` is the
  /// fraction of a batch each pipeline gets (its gradient is that share of the batch's).
  SyncExecutor(std::shared_ptr<SyncPolicy> policy, std::string label, PluginOptions options, std::size_t pipelines,
               std::size_t stages, double batch_share, BufferSync buffers,
               std::function<std::vector<StageWorker*>(std::size_t)> replicas);
  ~SyncExecutor();

  /// In a run of several processes: whether stage s's replica of pipeline p is this
  /// process's (`local`), and the sum of a stage's tensors over the processes that hold
  /// the replicas of a group's pipelines (`sum`, called by this process's members only).
  /// A round's groups then span them: its gradient all-reduce, parameter averaging
  /// (ad-psgd's pairs too) or elastic move (every process keeping a copy of the stage's
  /// centre); so do scheduled averaging's groups (average(), called by the averager of
  /// each process that holds a member).
  /// An asynchronous elastic move, and a parameter server's push from one process's
  /// pipelines alone, go from there to the others as they are (`broadcast`, from the
  /// process of `root`'s replica), where the sum would add the others' zeros; `process`
  /// says whose a replica is.
  struct Across {
    std::function<bool(std::size_t stage, std::size_t pipeline)> local;
    std::function<void(std::size_t stage, const std::vector<std::size_t>& pipelines, const std::vector<Payload>&)> sum;
    std::function<std::size_t(std::size_t stage, std::size_t pipeline)> process;
    std::function<void(std::size_t stage, const std::vector<std::size_t>& pipelines, std::size_t root,
                       const std::vector<Payload>&)>
        broadcast;
  };
  void span_processes(Across across) { across_ = std::move(across); }

  /// A resumed run's state was loaded into this process's replicas after the executor
  /// was made (a worker's): asynchronous elastic centres start again from them.
  void restored();

  /// Called by stage `stage`'s replica of `pipeline` once its gradients of step `step`
  /// are ready, before it arrives at the round: when the round steps every replica on
  /// its own gradient before averaging (average_parameters, elastic), steps this one
  /// now, on the caller's thread, and returns true. So the replicas' optimizer steps run
  /// side by side, not one after another on the last arriver's thread. Otherwise
  /// nothing (false). Throws as run() does.
  bool step_ahead(std::size_t stage, std::size_t pipeline, std::uint64_t step);

  /// Stage `stage`'s round of step `step` (1-based), once every replica has arrived
  /// (and stepped ahead where the round says so). True when the replicas have stepped,
  /// which then must not step again. Throws std::runtime_error, naming the policy, for
  /// a round the policy refuses or gets wrong (groups that overlap or name no pipeline).
  bool run(std::size_t stage, std::uint64_t step);

  /// An asynchronous policy's round 0, the same kind for every stage
  /// (scheduled_averaging with its scheduling, parameter_server with its staleness,
  /// elastic_asynchronous with its rate and period, whose centres it makes); none for
  /// a lockstep policy. Throws std::runtime_error for a policy
  /// that refuses, mixes kinds across stages, or schedules groups that cannot run.
  std::optional<SyncRound> asynchronous();

  /// Scheduled averaging (AveragingSnapshot), each called by the stage actor it names,
  /// or by the stage index's averager actor for average(): the snapshot of stage `stage`'s
  /// replica of `pipeline` as it asks; the changes that average the snapshots of
  /// `pipelines` (and agree their buffers); the change added to the replica.
  void snapshot(std::size_t stage, std::size_t pipeline);
  void average(std::size_t stage, const std::vector<std::size_t>& pipelines);
  void correct(std::size_t stage, std::size_t pipeline);

  /// The parameter server of stage `stage` steps on `pushers`' gradients, each its share
  /// of a batch's, and they take its parameters. Called by that stage's server actor
  /// only; in a run of several processes, by every process's server copy of the stage
  /// for every push (each process keeps a copy of the server).
  void serve(std::size_t stage, const std::vector<std::size_t>& pushers);

  /// Runs `use` (evaluation, a checkpoint) with the model the policy trains in pipeline
  /// 0's replicas: for `elastic` and `parameter-server`, the centre variables or the
  /// servers' weights, put there for the while and swapped back after; for scheduled
  /// averaging, the replicas' mean, which every replica keeps (the run is between
  /// steps: one more averaging); for the others, the replicas as they are. In a run of
  /// several processes, scheduled averaging's mean sums across them: every process
  /// with replicas calls this at the same point.
  void with_model(const std::function<void()>& use);

private:
  /// The policy's round of `step` for `stage`, asked once and kept for the step's other
  /// callers (step_ahead() from every replica, then run()); an elastic stage's centre is
  /// made at its first round, before any replica steps.
  SyncRound round_of(std::size_t stage, std::uint64_t step);
  /// Stage `stage`'s replica that a centre or server starts from: every replica starts
  /// alike, and in a run of several processes this one's are loaded (the first here).
  StageWorker& first_replica(std::size_t stage);
  std::vector<std::size_t> every_pipeline() const; ///< 0 … pipelines − 1

  std::shared_ptr<SyncPolicy> policy_;
  std::string label_; ///< "sync 'NAME'"
  PluginOptions options_;
  std::size_t pipelines_;
  double batch_share_;
  BufferSync buffers_;
  std::function<std::vector<StageWorker*>(std::size_t)> replicas_;
  std::vector<std::unique_ptr<ElasticCentre>> centres_;   ///< per stage, made at its first elastic round
  std::vector<std::unique_ptr<ServerWeights>> servers_;   ///< per stage, made at its first push
  std::vector<std::vector<AveragingSnapshot>> snapshots_; ///< [stage][pipeline]
  std::mutex rounds_mutex_;                               ///< for rounds_ and centres_' making
  std::vector<std::optional<std::pair<std::uint64_t, SyncRound>>> rounds_; ///< per stage: the latest step's
  bool averaging_ = false;                                                 ///< the policy is scheduled averaging
  std::optional<Across> across_;        ///< several processes: how their replicas sync
  std::optional<double> elastic_alpha_; ///< the policy is asynchronous elastic averaging, at this rate
};

} // namespace actorpipe::train
