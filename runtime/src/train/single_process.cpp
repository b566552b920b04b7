/// SingleProcessTraining: the reference and baseline trainer.

#include "train/single_process.hpp"
#include "train/lr_schedule.hpp"
#include "train/step_parts.hpp"

namespace actorpipe::train {

Result<std::unique_ptr<SingleProcessTraining>> SingleProcessTraining::open(const JobSpec& job, int cuda_device) {
  auto data = load_data(job);
  ACTORPIPE_TRY(data);
  auto model = build_model(job, data->shape);
  ACTORPIPE_TRY(model);
  if (job.train.batch_size == 0 || data->train.size() < static_cast<std::int64_t>(job.train.batch_size))
    return Error::bad_input("train.batch_size: " + std::to_string(job.train.batch_size) +
                            " samples, but the data has " + std::to_string(data->train.size()));
  std::unique_ptr<SingleProcessTraining> t(new SingleProcessTraining());
  t->job_ = job;
  t->data_ = std::move(*data);
  t->model_ = std::move(*model);
  for (const ModelBlock& block : t->model_.blocks)
    for (const ModelUnit& unit : block.units) {
      unit.set_training(true);
      t->units_.push_back(&unit);
      t->parameters_.insert(t->parameters_.end(), unit.parameters.begin(), unit.parameters.end());
    }
  try {
    if (cuda_device >= 0) {
      t->device_ = device::StageDevice::cuda(cuda_device);
      for (const ModelUnit* unit : t->units_)
        for (auto* tensors : {&unit->parameters, &unit->buffers})
          for (torch::Tensor t_ : *tensors)
            t->device_.adopt(t_);
      if (job.train.precision == Precision::fp32) {
        at::globalContext().setAllowTF32CuBLAS(false);
        at::globalContext().setAllowTF32CuDNN(false);
      }
    }
  } catch (const std::exception& e) {
    return Error::run_failed(e.what());
  }
  if (job.train.precision == Precision::fp16) t->scaler_ = std::make_unique<device::LossScaler>(t->device_.device());
  t->optimizer_ = make_optimizer(t->parameters_, job.train);
  return t;
}

void SingleProcessTraining::take_step() {
  // LibTorch's own clipping: the stages' global norm (StageWorker) must agree with it.
  if (job_.train.clip_norm > 0) torch::nn::utils::clip_grad_norm_(parameters_, job_.train.clip_norm);
  const std::uint64_t per_epoch = static_cast<std::uint64_t>(data_.train.size() / job_.train.batch_size);
  const std::uint64_t total = job_.train.steps ? job_.train.steps : job_.train.epochs * per_epoch;
  set_lr(*optimizer_, lr_at(job_.train, steps_ + 1, total));
  optimizer_->step();
}

double SingleProcessTraining::step() {
  const std::int64_t B = job_.train.batch_size;
  const std::uint64_t per_epoch = static_cast<std::uint64_t>(data_.train.size() / B);
  const std::uint64_t epoch = steps_ / per_epoch, index = steps_ % per_epoch;
  if (index == 0) order_ = epoch_order(data_.train.size(), job_.data.seed, epoch, job_.data.shuffle);
  const auto picked = torch::from_blob(order_.data() + index * B, {B}, torch::kLong);
  const auto on = device_.enter();
  const bool pin = device_.is_cuda();
  torch::Tensor x = device_.take(device::pinned_if(pin, model_inputs(data_.train.inputs.index_select(0, picked))));
  const torch::Tensor y =
      device_.take(device::pinned_if(pin, model_labels(data_.train.labels.index_select(0, picked))));
  {
    const device::AutocastScope autocast(job_.train.precision, device_.device());
    for (const ModelUnit* u : units_)
      x = u->forward(x);
  }
  const torch::Tensor loss = mean_loss(x.to(torch::kFloat), y);
  if (scaler_) {
    (loss * scaler_->scale()).backward();
    std::vector<torch::Tensor> gradients;
    for (const torch::Tensor& p : parameters_)
      if (p.grad().defined()) gradients.push_back(p.grad());
    if (scaler_->unscale(gradients)) take_step();
  } else {
    loss.backward();
    take_step();
  }
  optimizer_->zero_grad();
  ++steps_;
  return loss.item<double>();
}

} // namespace actorpipe::train
