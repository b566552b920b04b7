#pragma once

/// The job's model trained the plain way: one process, one thread of control, whole
/// batches, the samples in the order a run takes them. What pipeline + data-parallel
/// runs are checked against (they must end with equal parameters) and the baseline
/// the runtime benchmark measures them against. LibTorch inside.

#include "device/precision.hpp"
#include "device/stage_device.hpp"
#include "train/datasets.hpp"
#include "train/model_zoo.hpp"

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace actorpipe::train {

class SingleProcessTraining {
public:
  /// Loads the job's data and builds its model from the job's seed, on CUDA device
  /// `cuda_device` (-1: the CPU), computing in the job's train.precision.
  static Result<std::unique_ptr<SingleProcessTraining>> open(const JobSpec& job, int cuda_device = -1);

  /// Trains on the next batch of `train.batch_size` samples (its gradient clipped by
  /// train.clip_norm, its learning rate the schedule's); returns its loss. The
  /// schedule spans train.steps, or train.epochs' whole epochs.
  double step();
  /// Every parameter, in model order.
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }

private:
  SingleProcessTraining() = default;
  /// The optimizer step on the batch's final gradients.
  void take_step();
  JobSpec job_;
  DataSets data_;
  Model model_;
  std::vector<const ModelUnit*> units_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<std::int64_t> order_;
  device::StageDevice device_;
  std::unique_ptr<device::LossScaler> scaler_; ///< fp16's
  std::uint64_t steps_ = 0;
};

} // namespace actorpipe::train
