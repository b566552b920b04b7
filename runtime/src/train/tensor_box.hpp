#pragma once

/// What a Payload holds. LibTorch inside: include only from the training code.

#include "train/payload.hpp"

#include <torch/torch.h>

namespace actorpipe::train {

struct TensorBox {
  torch::Tensor tensor;
};

inline Payload wrap(torch::Tensor tensor) { return std::make_shared<const TensorBox>(TensorBox{std::move(tensor)}); }

} // namespace actorpipe::train
