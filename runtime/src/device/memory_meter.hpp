#pragma once

/// Bytes of tensor memory a device holds, as its allocator counts them: what the
/// profiler weighs a unit's stash and workspace with, and what a run's memory estimate
/// is checked against. On a GPU, LibTorch's caching allocator's own statistics; on the
/// CPU, LibTorch's CPU allocator wrapped for as long as a meter lives, counting what it
/// hands out and takes back. LibTorch inside: include only from the training code.

#include <c10/core/Device.h>

#include <cstdint>

namespace actorpipe::device {

class MemoryMeter {
public:
  /// Starts counting on `device`. On the CPU only one meter may live at a time, and only
  /// memory allocated while it lives is counted (freeing older tensors lowers nothing).
  explicit MemoryMeter(c10::Device device);
  ~MemoryMeter();
  MemoryMeter(const MemoryMeter&) = delete;
  MemoryMeter& operator=(const MemoryMeter&) = delete;

  /// Bytes held now, relative to when the meter started on the CPU (absolute on a GPU):
  /// only differences between two readings mean anything.
  std::int64_t live() const;
  /// The most bytes held at once since the last reset_peak(), on the same scale as live().
  std::int64_t peak() const;
  /// Starts the peak anew from what is held now.
  void reset_peak();

private:
  c10::Device device_;
};

} // namespace actorpipe::device
