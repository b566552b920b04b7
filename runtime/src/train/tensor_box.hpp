#pragma once

/// What a Payload holds. LibTorch inside: include only from the training code.

#include "train/payload.hpp"

#include <torch/torch.h>

#include <c10/core/Event.h>

#include <memory>
#include <optional>

namespace actorpipe::train {

struct TensorBox {
  torch::Tensor tensor;
  std::optional<BatchRows> rows; ///< where the tensor's rows come from, when a batch's
  /// On a GPU: recorded on the producer's stream after the work that wrote the tensor;
  /// a consumer's stream waits for it (device/stage_device.hpp). None: ready now.
  std::shared_ptr<const c10::Event> ready{};
};

inline Payload wrap(torch::Tensor tensor) {
  return std::make_shared<const TensorBox>(TensorBox{std::move(tensor), std::nullopt, nullptr});
}

} // namespace actorpipe::train
