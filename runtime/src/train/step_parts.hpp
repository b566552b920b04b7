#pragma once

/// What every training step is made of, shared by the stage workers and the
/// single-process reference so that both train exactly alike: the job's optimizer and
/// its loss. LibTorch inside.

#include <actorpipe/job.hpp>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace actorpipe::train {

/// The optimizer `[train]` names (sgd with momentum, or adam) over `parameters`.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const TrainOptions& options);

/// Mean cross-entropy of logits [..., classes] against labels [...]: per sample for
/// the classifiers, per position for gpt.
torch::Tensor mean_loss(const torch::Tensor& logits, const torch::Tensor& labels);

} // namespace actorpipe::train
