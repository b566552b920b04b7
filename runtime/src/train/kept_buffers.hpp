#pragma once

/// A stage's buffers (BatchNorm's running statistics) put back as they were at the end
/// of a scope: after a forward that computes again what was computed once
/// (recomputation) or that only readies a CUDA graph's capture, so that a run counts
/// each micro-batch's forward once. LibTorch inside: include only from the training code.

#include <torch/torch.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace actorpipe::train {

struct KeptBuffers {
  std::vector<torch::Tensor> buffers, values;
  explicit KeptBuffers(std::vector<torch::Tensor> of) : buffers(std::move(of)) {
    for (const torch::Tensor& b : buffers)
      values.push_back(b.clone());
  }
  ~KeptBuffers() {
    const torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < buffers.size(); ++i)
      buffers[i].copy_(values[i]);
  }
  KeptBuffers(const KeptBuffers&) = delete;
  KeptBuffers& operator=(const KeptBuffers&) = delete;
};

} // namespace actorpipe::train
