#pragma once

/// What sync policies do to the replicas of one stage index: sum or scale gradients,
/// average parameters or buffers, move them towards an elastic centre, or serve them
/// from a parameter server. The callers (train::SyncExecutor) make sure no replica is
/// computing meanwhile. No LibTorch types show here.

#include "train/payload.hpp"
#include "train/stage_worker.hpp"

#include <actorpipe/job.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::train {

/// Replaces the gradients of every replica by their sum, computed in place in the first
/// replica's gradient, which every replica then holds until its step. Each replica's
/// loss is scaled by its share of the batch, so the sum is the gradient of the whole
/// batch's mean loss: the replicas' average, weighted by their shares.
/// `scale` multiplies the sum: a group of some of the pipelines scales its sum up to the
/// whole batch's.
void sum_gradients(const std::vector<StageWorker*>& replicas, double scale = 1);

/// Multiplies the replica's gradients by `factor`: a pipeline that steps on its own
/// gradient scales its share of the batch's up to its own batch's mean.
void scale_gradients(StageWorker& replica, double factor);

/// Replaces every replica's parameters by their mean.
void average_parameters(const std::vector<StageWorker*>& replicas);

/// Sums tensors in place over the processes that hold replicas of a stage index (a
/// c10d all-reduce in a run of several processes).
using SumAcross = std::function<void(const std::vector<Payload>&)>;

/// average_parameters() over a group of `members` replicas that live in several
/// processes, `local` being this process's (at least one): the local ones' sum and the
/// processes' sums (`across`), over `members`.
void average_parameters_across(const std::vector<StageWorker*>& local, std::size_t members, const SumAcross& across);

class ElasticCentre;

/// Scheduled averaging that lets a pipeline compute on while its group forms: a
/// replica's parameters and buffers as they were when it asked, which its group's
/// averaging turns into the change averaging makes to them (the group's mean, or its
/// agreed buffer, minus them). The replica adds the change at its next step's end, so
/// what it learnt meanwhile stays on top of the mean.
class AveragingSnapshot {
public:
  AveragingSnapshot();
  ~AveragingSnapshot();
  AveragingSnapshot(AveragingSnapshot&&) noexcept;

  /// Copies `replica`'s parameters and buffers; no change is pending.
  void take(StageWorker& replica);
  /// Turns each member's snapshot into its change: parameters to the group's mean,
  /// buffers as agree_buffers() would agree them (`buffers`). `local` are the snapshots
  /// of the group's members in this process, in the group's order; `members` counts
  /// them all, `holds_first` says the group's first is here. Members in other processes
  /// are summed in through `across` (none: the group is `local`). A group of one
  /// changes nothing.
  static void average(const std::vector<AveragingSnapshot*>& local, std::size_t members, bool holds_first,
                      BufferSync buffers, const SumAcross& across = {});
  /// Asynchronous elastic averaging: with d = snapshot − c, the snapshot's change
  /// becomes −alpha · d and the centre moves by alpha · d. Buffers stay the replica's.
  /// With `across`, every other process keeping a copy of the centre moves it alike
  /// (ElasticCentre::follow()).
  void move_with(ElasticCentre& centre, double alpha, const SumAcross& across = {});
  /// Adds the pending change, if any, to `replica`'s parameters and buffers.
  void apply(StageWorker& replica);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A stage's centre variable for elastic averaging: a copy of its parameters that the
/// replicas are pulled towards and that is pulled towards them.
class ElasticCentre {
public:
  /// Starts at `initial`'s parameters (every replica starts from the same).
  explicit ElasticCentre(StageWorker& initial);
  ~ElasticCentre();
  ElasticCentre(ElasticCentre&&) noexcept;
  /// With d_p = x_p − c for each replica p of `group`: x_p ← x_p − alpha · d_p and
  /// c ← c + alpha · Σ_p d_p. With `across`, `group` is this process's share of the
  /// replicas, the sum is over every process's, and every process keeps a copy of the
  /// centre, which moves alike in each.
  void move(const std::vector<StageWorker*>& group, double alpha, const SumAcross* across = nullptr);
  /// Exchanges the centre's parameters with `replica`'s (twice: as they were).
  void swap(StageWorker& replica);
  /// A copy of the centre in a process that holds none of the replica it moves with:
  /// takes the move that process sums in (AveragingSnapshot::move_with()), adding
  /// nothing of its own.
  void follow(const SumAcross& across);

private:
  friend class AveragingSnapshot;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Makes every replica's buffers (BatchNorm's running statistics) the first replica's
/// (`how` BufferSync::broadcast) or, for floating-point buffers, their mean (BufferSync::average), as
/// TrainOptions::buffers says. Each replica updated its own from its own micro-batches.
void agree_buffers(const std::vector<StageWorker*>& replicas, BufferSync how);

/// sum_gradients() over a group whose replicas live in several processes, `local` being
/// this process's (at least one): sums the local ones, then the processes' sums
/// (`across`), scaled by `scale`; every local replica holds the result.
void sum_gradients_across(const std::vector<StageWorker*>& local, double scale, const SumAcross& across);

/// agree_buffers() over such a group of `members` replicas: BufferSync::average sums the local
/// ones' floating-point buffers and the processes' sums, over `members`; otherwise every
/// replica takes those of the group's first, which `holds_first` says is local.
void agree_buffers_across(const std::vector<StageWorker*>& local, std::size_t members, bool holds_first, BufferSync how,
                          const SumAcross& across);

/// A parameter server's copy of one stage: its parameters and an optimizer of its own
/// (the job's kind), which steps on the gradients pipelines push; pipelines then pull
/// the parameters. Buffers stay each replica's. Its learning rate follows the run's
/// schedule by the whole steps its fractions add up to.
class ServerWeights {
public:
  /// Starts at `initial`'s parameters (every replica starts from the same).
  ServerWeights(StageWorker& initial, const TrainOptions& train);
  ~ServerWeights();
  ServerWeights(ServerWeights&&) noexcept;

  /// One optimizer step on the mean of `pushes` replicas' gradients (each its own
  /// share's mean), as the fraction of a whole step that they are of a batch (`pushes`
  /// × `share`, step_fraction()): pushes of every pipeline make one batch's step,
  /// whether stepped on together or one by one. Adam, which takes the gradient's scale
  /// out, and weight decay so step a batch's worth over a batch's pushes, not one whole
  /// step per push, and momentum forgets at a batch's pace. The replicas drop their
  /// gradients and take the new parameters. With `across`, `pushers` are this
  /// process's (maybe none) of the `pushes`: every process keeps a copy of the server,
  /// which steps alike on the gradients summed over all.
  void serve(const std::vector<StageWorker*>& pushers, std::size_t pushes, double share, const SumAcross& across = {});
  /// Exchanges the server's parameters with `replica`'s (twice: as they were).
  void swap(StageWorker& replica);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace actorpipe::train
