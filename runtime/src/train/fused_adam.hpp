#pragma once

/// Adam stepping every parameter of a device in one fused kernel. LibTorch inside.

#include <torch/torch.h>

#include <cstdint>
#include <unordered_map>

namespace actorpipe::train {

/// torch::optim::Adam whose step runs ATen's `_fused_adam_` (what torch.optim.Adam
/// runs with fused=True) once per device and dtype, instead of about ten kernels per
/// parameter. On a GPU those per-parameter launches cost more host time than the GPU
/// spends on them: a 12-layer GPT has ~150 parameter tensors, and its bf16 step on an
/// H100 went from 58.7 to 54.7 ms (bench/gpu_bench's plain loop) once they were fused. The options and per-parameter
/// state are torch::optim::Adam's own (AdamParamState), so checkpoints move between the two and `step_fraction` scales
/// its learning rate alike.
class FusedAdam final : public torch::optim::Adam {
public:
  using torch::optim::Adam::Adam;

  torch::Tensor step(LossClosure closure = nullptr) override;

private:
  /// The kernel reads each parameter's step count from a tensor on its device; kept
  /// there, and rebuilt from AdamParamState's count when that moved without it (a
  /// loaded checkpoint), so that a step never reads the count back to the host.
  struct DeviceCount {
    torch::Tensor count;
    std::int64_t step = -1;
  };
  std::unordered_map<const void*, DeviceCount> counts_;
};

} // namespace actorpipe::train
