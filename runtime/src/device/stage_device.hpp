#pragma once

/// Where one stage's tensors live and how they arrive and leave: the CPU, or a CUDA
/// device with a stream of the stage's own. Between stages on one GPU an activation or
/// gradient goes by pointer, ordered by a CUDA event recorded on the producer's stream;
/// to another GPU it is copied on the receiver's stream; batches go host→device from
/// pinned memory without blocking. Nothing here waits on the host for a GPU except
/// settle(). LibTorch inside (its device-generic streams and events, so this compiles
/// the same without CUDA): include only from the training code.

#include <torch/torch.h>

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>

#include <memory>
#include <optional>

namespace actorpipe::device {

class StageDevice {
public:
  /// The CPU: tensors stay where they are and nothing is ordered.
  StageDevice() = default;
  /// CUDA device `index`, with a stream of its own from LibTorch's pool. Throws
  /// std::runtime_error where LibTorch has no CUDA or no such device.
  static StageDevice cuda(int index);

  c10::Device device() const { return device_; }
  bool is_cuda() const { return device_.is_cuda(); }
  /// This stage's stream made current on the calling thread for the scope (on CUDA),
  /// ordered (on the GPU) after what other threads queued on the device's default
  /// stream: a sync round's sums, an evaluation.
  std::optional<c10::StreamGuard> enter() const;

  /// `tensor` ready to use here, on this stage's stream: waits (on the GPU) for `ready`,
  /// the event its producer recorded (none: ready now), then takes it by pointer on
  /// this device or copies it from the host or another GPU.
  torch::Tensor take(const torch::Tensor& tensor, const c10::Event* ready = nullptr) const;
  /// An event recorded on this stage's stream after the work queued so far (what a
  /// tensor it computed is given away with, for the taker to wait for); none on the CPU.
  std::shared_ptr<const c10::Event> record() const;
  /// Moves `tensor` (a parameter or buffer: its storage is swapped, so the module that
  /// owns it sees the move) to this device.
  void adopt(torch::Tensor& tensor) const;
  /// Blocks until everything queued on this stage's stream is done (before code on
  /// another thread, such as a sync round, touches its tensors).
  void settle() const;

private:
  c10::Device device_{c10::kCPU};
  std::optional<c10::Stream> stream_;
};

/// Rows of a batch in page-locked memory where some stage computes on a GPU, so that
/// the stage's host→device copy does not block its thread.
torch::Tensor pinned_if(bool pin, torch::Tensor rows);

} // namespace actorpipe::device
