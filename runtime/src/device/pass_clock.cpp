/// PassClock: host time points on the CPU, timing CUDA events on a GPU.

#include "device/pass_clock.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace actorpipe::device {

std::size_t PassClock::mark() {
  if (device_.is_cpu()) {
    if (times_.size() <= marks_) times_.resize(marks_ + 1);
    times_[marks_] = std::chrono::steady_clock::now();
    return marks_++;
  }
  // Timing events: LibTorch's default ones have timing switched off.
  if (events_.size() <= marks_) events_.emplace_back(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(device_.type())->getStream(device_);
  events_[marks_].record(stream);
  return marks_++;
}

void PassClock::finish() {
  if (!device_.is_cpu() && marks_ > 0) events_[marks_ - 1].synchronize();
}

double PassClock::ms(std::size_t from, std::size_t to) const {
  if (device_.is_cpu()) return std::chrono::duration<double, std::milli>(times_.at(to) - times_.at(from)).count();
  return events_.at(from).elapsedTime(events_.at(to));
}

} // namespace actorpipe::device
