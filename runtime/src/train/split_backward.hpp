#pragma once

/// A stage's backward of one micro-batch in two halves, as zero-bubble schedules run it
/// (schedule.hpp: I and W). The I computes the gradient of the stage's input alone; the
/// W, later, the gradients of its weights. Found on the micro-batch's autograd graph as
/// PyTorch's pipelining finds them: the nodes on the way from the output to the input
/// that also lead to a weight ("intermediates") hand the W the gradient that reached
/// them during the I, and the W runs from there to the weights only. So the two halves
/// together compute what one backward computes, once, for every model the zoo has or
/// TorchScript imports. LibTorch inside: include only from the training code.

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace actorpipe::train {

class WeightGradients {
public:
  /// The I: the gradient of `input` (a leaf that requires it) from `output`'s gradient
  /// `output_gradient` (undefined where `output` is the loss, a scalar), computing only
  /// what it needs and keeping, for weight_gradients(), what the W needs. Where `input`
  /// needs no gradient (the first stage), nothing is computed and the W does the whole
  /// backward; the result is then undefined.
  static std::pair<torch::Tensor, WeightGradients> input_gradient(const torch::Tensor& output,
                                                                  const torch::Tensor& output_gradient,
                                                                  const torch::Tensor& input,
                                                                  const std::vector<torch::Tensor>& parameters);

  /// The W: adds the gradients of `parameters` (those input_gradient() was given) to
  /// their `grad`, as a whole backward would. Once.
  void accumulate(const std::vector<torch::Tensor>& parameters);
  /// The W's gradients instead, by parameter (undefined where none came), for a caller
  /// that hands them on (a recomputed run's gradient node). Once, instead of accumulate().
  std::vector<torch::Tensor> take(const std::vector<torch::Tensor>& parameters);

  WeightGradients(WeightGradients&&) noexcept;
  WeightGradients& operator=(WeightGradients&&) noexcept;
  ~WeightGradients();

  struct Groups; ///< defined where it is used: split_backward.cpp

private:
  explicit WeightGradients(std::shared_ptr<Groups> groups);
  std::shared_ptr<Groups> groups_;
};

} // namespace actorpipe::train
