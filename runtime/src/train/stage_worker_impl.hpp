#pragma once

/// StageWorker's insides, for the training code that saves, loads or evaluates
/// stages. LibTorch inside.

#include "device/precision.hpp"
#include "device/stage_device.hpp"
#include "train/gradient_buckets.hpp"
#include "train/graphed_passes.hpp"
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
  /// needs instead. A micro-batch of the CUDA graphs keeps its slot there instead, and
  /// a split backward's I of it adds its weights' gradients too (weights_added).
  struct Stash {
    torch::Tensor input;
    torch::Tensor output;
    std::optional<WeightGradients> weights;
    std::optional<std::size_t> slot;
    bool weights_added = false;
  };
  std::map<std::size_t, Stash> stash;
  /// Where its parameters, activations and gradients live, and its stream there.
  device::StageDevice device;
  /// Σ mean loss × samples of this step's micro-batches (the last stage), on the device.
  torch::Tensor loss_sum;
  std::unique_ptr<device::LossScaler> scaler; ///< fp16's
  /// fp16: the step's gradients are unscaled already (for their norm), and whether
  /// they were finite; unset until then.
  std::optional<bool> unscaled;
  /// Its gradients of this step are one summed tensor that the other replicas of this
  /// process hold too (sum_gradients) until each has stepped: unscaled in place, the
  /// first to step would leave the others' divided again.
  bool shared_gradients = false;
  /// The run's first step (> 1 when resumed) and its steps, which the learning rate's
  /// schedule spans (set_schedule()).
  std::uint64_t first_step = 1, total_steps = 0;
  /// Its forward and backward as CUDA graphs (train.cuda_graphs), made at the first
  /// forward where the stage can use them; see graphed().
  std::unique_ptr<GraphedPasses> graphs;
  bool graphs_considered = false;

  /// Its units' forward on `x` (on its device), in its precision. With grad on, the
  /// runs of units setup.recomputed marks keep only their input and compute again in
  /// the backward (recomputation.hpp), drawing what they drew the first time.
  torch::Tensor run(torch::Tensor x) const;
  /// The CUDA graphs that compute a micro-batch with input `x`, made on first use; null
  /// where the stage computes eagerly: train.cuda_graphs leaves it out (false, or "auto"
  /// where no other stage of the run computes on its GPU), the stage is not on a GPU,
  /// draws random numbers, recomputes, or has nothing to differentiate, or capturing
  /// failed (said once on stderr).
  GraphedPasses* graphed(const torch::Tensor& x, bool first, bool last);
};

/// A stage's parameters ("p0", "p1", ...), buffers ("b0", ...) and optimizer state
/// ("optimizer") into `archive`: what a checkpoint keeps of it.
void write_state(const StageWorker::Impl& stage, torch::serialize::OutputArchive& archive);

/// Reads them back into `stage`. An empty string, or what does not fit: "parameter 3
/// has another shape than the model's".
std::string read_state(StageWorker::Impl& stage, torch::serialize::InputArchive& archive);

} // namespace actorpipe::train
