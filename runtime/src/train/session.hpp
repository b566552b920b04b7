#pragma once

/// The LibTorch side of one training run: the data, one model replica per pipeline
/// (all drawn from the job's seed, so they start equal), a StageWorker per pipeline ×
/// stage, batches in a resumable order, test evaluation and checkpoints. The actors
/// drive it; no LibTorch types show here.

#include "train/payload.hpp"
#include "train/stage_worker.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/training.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::train {

struct Batch {
  Payload inputs;
  Payload labels;
  std::uint32_t samples = 0;
};

struct Evaluation {
  double accuracy = 0; ///< fraction of test predictions (positions, for gpt) that are right
  double loss = 0;     ///< mean test cross-entropy
  std::int64_t samples = 0;
};

/// Where a run is: what a checkpoint records besides the parameters.
struct Progress {
  std::uint64_t step = 0;  ///< steps done in all
  std::uint64_t epoch = 0; ///< the epoch the next step belongs to
  std::uint64_t index = 0; ///< the next step's batch within that epoch
};

class Session {
public:
  /// Builds the replicas and workers for `plan`, over `data` (loaded now when null).
  /// Each stage computes with an even share of this process's cores among `stages_here`
  /// stage actors (0: every stage of the plan; a worker process counts its own).
  /// `runs_here[p][s]`: whether this process runs stage s of pipeline p (empty: every
  /// stage), which decides the stages that share a GPU (train.cuda_graphs "auto").
  static Result<std::unique_ptr<Session>> open(const JobSpec& job, const Plan& plan,
                                               std::shared_ptr<const TrainingData> data = nullptr,
                                               std::size_t stages_here = 0,
                                               const std::vector<std::vector<char>>& runs_here = {});
  ~Session();

  std::uint64_t steps_per_epoch() const;
  std::int64_t train_samples() const;
  /// Batch `index` of epoch `epoch`: `plan.batch_size` samples in the epoch's order.
  /// Its payloads say which batch they are (batch_rows()).
  Batch batch(std::uint64_t epoch, std::uint64_t index) const;
  /// The same batch as which rows it is, with no tensors: for a coordinator whose
  /// workers all make their batches themselves (rows()), which would never read them.
  Batch batch_rows_only(std::uint64_t epoch, std::uint64_t index) const;
  /// Those rows of a batch, made here: a worker process makes its pipelines' inputs
  /// and labels itself instead of receiving their bytes. Safe from several threads.
  Payload rows(const BatchRows& rows) const;
  /// A hash of the training split's inputs and labels: processes whose fingerprints
  /// match make the same batches.
  std::uint64_t data_fingerprint() const;

  /// The run's first step and its steps, which the learning rate's schedule spans.
  void schedule(std::uint64_t first_step, std::uint64_t total_steps);

  StageWorker& worker(std::size_t pipeline, std::size_t stage);
  /// The replicas of stage `stage`, one per pipeline.
  std::vector<StageWorker*> replicas(std::size_t stage);

  /// Optimizer steps the replicas skipped so far, all together, because their fp16
  /// gradients overflowed (train.precision = "fp16"); 0 otherwise.
  std::uint64_t skipped_steps() const;

  /// Waits until every stage's GPU work is done: before code on this thread reads or
  /// changes their tensors (evaluation, checkpoints).
  void settle();

  /// Accuracy and loss on the test split, through pipeline 0's stages in order (all
  /// pipelines hold the same parameters after a synchronous step).
  Evaluation evaluate();

  /// Writes parameters, buffers and optimizer state of every stage, and `progress`, to `path`
  /// atomically (a temporary file renamed over it).
  Status save_checkpoint(const std::string& path, const Progress& progress);
  /// Loads a checkpoint written for the same job and plan into every pipeline.
  Result<Progress> load_checkpoint(const std::string& path);

private:
  Session();
  struct Data;
  std::unique_ptr<Data> d_;
};

} // namespace actorpipe::train
