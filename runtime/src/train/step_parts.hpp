#pragma once

/// What every training step is made of, shared by the stage workers and the
/// single-process reference so that both train exactly alike: the job's optimizer and
/// its loss. LibTorch inside.

#include <actorpipe/job.hpp>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace actorpipe::train {

/// The optimizer `[train]` names (sgd with momentum, adam or adamw) over `parameters`;
/// Adam over parameters on a GPU is FusedAdam.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                        const TrainOptions& options);

/// One step of `optimizer` as `fraction` (in (0, 1]) of a whole one, on gradients of a
/// whole step's scale: a parameter server's step on some of a batch's pushes. The
/// learning rate is × `fraction`, and SGD's momentum decays by its factor to the power
/// `fraction`, taking the gradient in proportion: steps that add up to 1 move as far,
/// and forget as fast, as one whole step on the same gradient once it has settled.
/// Adam's moving averages stay per step: decaying them by the fraction too left the
/// gpt experiment's parameter server at a higher test loss (docs/running.md). The
/// options are as they were afterwards; a fraction of 1 is the whole step.
void step_fraction(torch::optim::Optimizer& optimizer, double fraction);

/// Every parameter group of `optimizer` at learning rate `lr` (the schedule's, for the
/// step it takes next).
void set_lr(torch::optim::Optimizer& optimizer, double lr);

/// Σ of the squares of the gradients of `parameters` (those that have one), in double:
/// each tensor's norm as torch.nn.utils.clip_grad_norm_ takes it, squared.
double square_sum(const std::vector<torch::Tensor>& parameters);

/// The gradients of `parameters` times `scale` (clipping), as new tensors: replicas of
/// a stage may hold one summed gradient (sum_gradients), which each would otherwise
/// scale again.
void scale_gradient_copies(std::vector<torch::Tensor>& parameters, double scale);

/// The factor clipping (train.clip_norm) multiplies every gradient by, given the norm
/// of them all: clip_norm / (norm + 1e-6) where that is below 1, as
/// torch.nn.utils.clip_grad_norm_; 1 where it is not, without clipping, or where the
/// norm is not finite (the fp16 step that overflowed is skipped anyway).
double clip_scale(double clip_norm, double norm);

/// Mean cross-entropy of logits [..., classes] against labels [...]: per sample for
/// the classifiers, per position for gpt.
torch::Tensor mean_loss(const torch::Tensor& logits, const torch::Tensor& labels);

} // namespace actorpipe::train
