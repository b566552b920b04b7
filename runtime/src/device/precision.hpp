#pragma once

/// Mixed precision for a stage (train.precision): LibTorch's autocast around the
/// compute, and for fp16 the dynamic loss scale that keeps small gradients from
/// vanishing, with steps on overflowed gradients skipped. Master weights and optimizer
/// state stay fp32. LibTorch inside: include only from the training code.

#include <actorpipe/job.hpp>

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace actorpipe::device {

/// Autocast to bf16 or fp16 on `device`'s kind for the scope; nothing for fp32. Its
/// cache of cast weights is dropped at the scope's end, as torch.autocast does.
class AutocastScope {
public:
  AutocastScope(Precision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

private:
  bool on_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  at::ScalarType was_type_ = at::kFloat;
};

/// fp16's dynamic loss scale, as torch.amp.GradScaler keeps it: starts at 2^16, halves
/// on a step whose gradients overflowed (which is then skipped), doubles after 2000
/// clean steps. On the stage's device; the check costs one wait for the device a step.
class LossScaler {
public:
  explicit LossScaler(c10::Device device);
  /// The scale the backward starts from (a one-element tensor on the device).
  const torch::Tensor& scale() const { return scale_; }
  /// Divides the gradients by the scale in place and updates the scale; false where
  /// some gradient is not finite, and the step must be skipped.
  bool unscale(const std::vector<torch::Tensor>& gradients);
  /// Steps skipped so far; read from other threads (the run's metrics).
  std::uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }

private:
  torch::Tensor scale_, growth_;
  std::atomic<std::uint64_t> skipped_{0};
};

} // namespace actorpipe::device
