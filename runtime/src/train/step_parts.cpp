/// The job's optimizer and loss.

#include "train/step_parts.hpp"

namespace actorpipe::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const TrainOptions& options) {
  if (options.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  return std::make_unique<torch::optim::SGD>(
      parameters, torch::optim::SGDOptions(options.lr).momentum(options.momentum).weight_decay(options.weight_decay));
}

torch::Tensor mean_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}));
}

} // namespace actorpipe::train
