#pragma once

/// What a Payload holds. LibTorch inside: include only from the training code.

#include "train/payload.hpp"

#include <torch/torch.h>

#include <optional>

namespace actorpipe::train {

struct TensorBox {
  torch::Tensor tensor;
  std::optional<BatchRows> rows; ///< where the tensor's rows come from, when a batch's
};

inline Payload wrap(torch::Tensor tensor) {
  return std::make_shared<const TensorBox>(TensorBox{std::move(tensor), std::nullopt});
}

} // namespace actorpipe::train
