#pragma once

/// Activation recomputation (plan.recompute): a run of a stage's units computed in the
/// forward without keeping what their backward needs, only their input, and computed
/// again, with its graph, when the backward reaches them. The gradient node that stands
/// for the run does that and hands the input and the run's weights their gradients,
/// computing only those the backward asks for. A split backward (schedule.hpp) asks
/// twice: its I runs the forward again and splits that graph as a stage's own
/// (split_backward.hpp), keeping the weights' half for its W. LibTorch inside: include
/// only from the training code.

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace actorpipe::train {

/// `first(x)` with grad off, its result joined to the autograd graph through a node
/// that keeps only `x` and, in the backward, runs `again` on it with grad on and
/// back-propagates through that. `parameters`: the weights they use, whose gradients
/// the node hands back. `again` must compute what `first` did (the caller replays what
/// it drew at random, and puts back the running statistics it moved).
torch::Tensor recomputed(std::function<torch::Tensor(const torch::Tensor&)> again,
                         const std::function<torch::Tensor(torch::Tensor)>& first, const torch::Tensor& x,
                         const std::vector<torch::Tensor>& parameters);

} // namespace actorpipe::train
