#pragma once

/// A replica's gradients kept as views of one flat buffer, so that a sum across
/// processes (transport::TensorTransport::all_reduce_sum) takes them as one tensor,
/// with no copies into and out of a buffer of its own (DDP's gradient buckets).

#include <torch/torch.h>

#include <vector>

namespace actorpipe::train {

class GradientBuckets {
public:
  /// Binds each of `parameters` that takes a gradient to a view of one flat buffer,
  /// holding the gradient it has now (zero where none). False, and nothing bound,
  /// where they do not share one element type and device.
  bool bind(std::vector<torch::Tensor>& parameters);

  /// After the optimizer step: the gradients become zeroed views of the other buffer
  /// (a parameter no backward reaches then steps on zero, as after zero_grad() in a
  /// single-device loop, instead of being skipped).
  /// Two buffers take turns because the replicas of a group read the summed gradient
  /// of the first replica, which the others may still be stepping on while the first
  /// starts accumulating its next one; they have all stepped before the first's step
  /// after that (each next sum waits for all of them).
  void next(std::vector<torch::Tensor>& parameters);

  bool bound() const { return buffers_[0].defined(); }

private:
  void point(std::vector<torch::Tensor>& parameters, const torch::Tensor& buffer) const;

  torch::Tensor buffers_[2];
  int current_ = 0;
};

} // namespace actorpipe::train
