#pragma once

/// StageWorker's insides, for the training code that saves, loads or evaluates
/// stages. LibTorch inside.

#include "device/precision.hpp"
#include "device/stage_device.hpp"
#include "train/gradient_buckets.hpp"
#include "train/model_zoo.hpp"
#include "train/split_backward.hpp"
#include "train/stage_worker.hpp"

#include <torch/torch.h>

#include <map>
#include <optional>

namespace actorpipe::train {

struct StageWorker::Impl {
  std::shared_ptr<const Model> model;
  StageSetup setup;
  std::vector<const ModelUnit*> units;
  std::vector<torch::Tensor> parameters;
  std::vector<torch::Tensor> buffers;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  /// Bound once the replica's gradients are summed across processes.
  GradientBuckets buckets;
  bool draws = false;         ///< some unit draws random numbers (dropout)
  std::uint64_t forwards = 0; ///< done so far, to seed the next one's draws
  /// Per micro-batch in flight: the input (a leaf that collects its gradient) and the
  /// output (the scaled loss on the last stage); after a split backward's I, what its W
  /// needs instead.
  struct Stash {
    torch::Tensor input;
    torch::Tensor output;
    std::optional<WeightGradients> weights;
  };
  std::map<std::size_t, Stash> stash;
  /// Where its parameters, activations and gradients live, and its stream there.
  device::StageDevice device;
  /// Σ mean loss × samples of this step's micro-batches (the last stage), on the device.
  torch::Tensor loss_sum;
  std::unique_ptr<device::LossScaler> scaler; ///< fp16's

  /// Its units' forward on `x` (on its device), in its precision. With grad on, the
  /// runs of units setup.recomputed marks keep only their input and compute again in
  /// the backward (recomputation.hpp), drawing what they drew the first time.
  torch::Tensor run(torch::Tensor x) const;
};

/// A stage's parameters ("p0", "p1", ...), buffers ("b0", ...) and optimizer state
/// ("optimizer") into `archive`: what a checkpoint keeps of it.
void write_state(const StageWorker::Impl& stage, torch::serialize::OutputArchive& archive);

/// Reads them back into `stage`. An empty string, or what does not fit: "parameter 3
/// has another shape than the model's".
std::string read_state(StageWorker::Impl& stage, torch::serialize::InputArchive& archive);

} // namespace actorpipe::train
