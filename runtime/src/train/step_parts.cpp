/// The job's optimizer and loss.

#include "train/step_parts.hpp"

#include "train/fused_adam.hpp"

#include <algorithm>
#include <cmath>

namespace actorpipe::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const TrainOptions& options) {
  if (options.optimizer == Optimizer::adam) {
    const auto adam = torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay);
    // On a GPU one fused kernel per step; on the CPU LibTorch's own loop, the step
    // PyTorch eager takes there too (the parity tests compare the two).
    if (!parameters.empty() && parameters.front().is_cuda()) return std::make_unique<FusedAdam>(parameters, adam);
    return std::make_unique<torch::optim::Adam>(parameters, adam);
  }
  if (options.optimizer == Optimizer::adamw)
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(options.lr).weight_decay(options.weight_decay));
  return std::make_unique<torch::optim::SGD>(
      parameters, torch::optim::SGDOptions(options.lr).momentum(options.momentum).weight_decay(options.weight_decay));
}

void step_fraction(torch::optim::Optimizer& optimizer, double fraction) {
  if (std::abs(fraction - 1.0) < 1e-12) {
    optimizer.step();
    return;
  }
  std::vector<std::unique_ptr<torch::optim::OptimizerOptions>> whole;
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) {
    whole.push_back(group.options().clone());
    torch::optim::OptimizerOptions& options = group.options();
    options.set_lr(options.get_lr() * fraction);
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options); sgd && sgd->momentum() > 0) {
      // v ← μ v + (1 − d) g settles at (1 − d) g / (1 − μ): keep that, and μ per whole step.
      const double momentum = std::pow(sgd->momentum(), fraction);
      sgd->dampening(1.0 - (1.0 - sgd->dampening()) * (1.0 - momentum) / (1.0 - sgd->momentum()));
      sgd->momentum(momentum);
    }
  }
  optimizer.step();
  for (std::size_t g = 0; g < whole.size(); ++g)
    optimizer.param_groups()[g].set_options(std::move(whole[g]));
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

double square_sum(const std::vector<torch::Tensor>& parameters) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const torch::Tensor& p : parameters)
    if (p.grad().defined()) norms.push_back(torch::linalg_vector_norm(p.grad(), 2).to(torch::kDouble));
  if (norms.empty()) return 0;
  return torch::stack(norms).square().sum().item<double>();
}

void scale_gradient_copies(std::vector<torch::Tensor>& parameters, double scale) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : parameters)
    if (p.grad().defined()) p.mutable_grad() = p.grad() * scale;
}

double clip_scale(double clip_norm, double norm) {
  if (clip_norm <= 0 || !std::isfinite(norm)) return 1.0;
  return std::min(1.0, clip_norm / (norm + 1e-6));
}

torch::Tensor mean_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}));
}

} // namespace actorpipe::train
