#pragma once

/// Times between points of a device's work, as the profiler marks them around each unit
/// of a pass over the model: the host's clock on the CPU, where work is done when the
/// call returns; CUDA events on the current stream on a GPU, where a call only queues
/// its kernels, so that a unit's time is its kernels' and not their launch's. Reading
/// the times waits once per pass, not once per unit. LibTorch inside: include only from
/// the training code.

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace actorpipe::device {

class PassClock {
public:
  explicit PassClock(c10::Device device) : device_(device) {}

  /// A point after everything queued on the device so far; returns its number.
  std::size_t mark();
  /// Waits until the device has passed every mark.
  void finish();
  /// Milliseconds from mark `from` to mark `to`, after finish().
  double ms(std::size_t from, std::size_t to) const;
  /// Forgets the marks (a GPU's events are kept for the next pass).
  void clear() { marks_ = 0; }

private:
  c10::Device device_;
  std::size_t marks_ = 0;
  std::vector<std::chrono::steady_clock::time_point> times_; ///< on the CPU
  std::vector<c10::Event> events_;                           ///< on a GPU, reused
};

} // namespace actorpipe::device
