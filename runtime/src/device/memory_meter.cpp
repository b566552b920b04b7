/// MemoryMeter: the caching allocator's statistics on a GPU, a counting wrapper around
/// LibTorch's CPU allocator on the CPU.

#include "device/memory_meter.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#ifdef ACTORPIPE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace actorpipe::device {

namespace {

/// The CPU's counts, and the size of each block handed out while counting. Never
/// destroyed: a tensor allocated through the wrapper may be freed after its meter has
/// gone, even at exit.
struct CpuCounts {
  std::atomic<std::int64_t> live{0}, peak{0};
  std::atomic<bool> metering{false};
  std::mutex mutex;
  std::unordered_map<void*, std::int64_t> sizes;
  c10::DeleterFnPtr free = nullptr; ///< the wrapped allocator's
};
CpuCounts& cpu_counts() {
  static auto* counts = new CpuCounts;
  return *counts;
}

void free_counted(void* data) {
  CpuCounts& counts = cpu_counts();
  {
    std::lock_guard lock(counts.mutex);
    if (const auto it = counts.sizes.find(data); it != counts.sizes.end()) {
      counts.live.fetch_sub(it->second, std::memory_order_relaxed);
      counts.sizes.erase(it);
    }
  }
  counts.free(data);
}

/// LibTorch's CPU allocator, counting. Its pointers stay simple (the data is their own
/// context, freed by one raw function), as code that allocates raw memory through the
/// CPU allocator requires. Installed at a higher priority than LibTorch's registration
/// while a meter lives, and the wrapped allocator put back after.
class CountingAllocator final : public c10::Allocator {
public:
  explicit CountingAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {
    if (!wrapped_->raw_deleter()) throw std::logic_error("LibTorch's CPU allocator has no raw deleter to wrap");
    cpu_counts().free = wrapped_->raw_deleter();
  }
  c10::DataPtr allocate(std::size_t n) override {
    c10::DataPtr inner = wrapped_->allocate(n);
    const c10::Device device = inner.device();
    void* data = inner.release_context();
    CpuCounts& counts = cpu_counts();
    const auto bytes = static_cast<std::int64_t>(n);
    {
      std::lock_guard lock(counts.mutex);
      counts.sizes[data] = bytes;
    }
    const std::int64_t now = counts.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::int64_t peak = counts.peak.load(std::memory_order_relaxed);
    while (now > peak && !counts.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return {data, data, &free_counted, device};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    wrapped_->copy_data(dest, src, count);
  }
  c10::Allocator* wrapped() const { return wrapped_; }

private:
  c10::Allocator* wrapped_;
};

/// Above the priority LibTorch registers its CPU allocator with, so that the wrapper
/// replaces it, and the same again to put it back.
constexpr std::uint8_t meter_priority = 100;

CountingAllocator*& installed() {
  static CountingAllocator* allocator = nullptr;
  return allocator;
}

} // namespace

MemoryMeter::MemoryMeter(c10::Device device) : device_(device) {
  if (device_.is_cpu()) {
    CpuCounts& counts = cpu_counts();
    if (counts.metering.exchange(true)) throw std::logic_error("a CPU memory meter is already counting");
    // Wrappers are kept (a counted tensor's deleter needs none of them, but the allocator
    // LibTorch hands out must stay valid for code that holds on to it).
    if (!installed()) installed() = new CountingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(installed(), meter_priority);
    counts.peak.store(counts.live.load());
    return;
  }
#ifdef ACTORPIPE_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
#else
  throw std::runtime_error("this build of actorpipe has no CUDA");
#endif
}

MemoryMeter::~MemoryMeter() {
  if (!device_.is_cpu()) return;
  c10::SetCPUAllocator(installed()->wrapped(), meter_priority);
  cpu_counts().metering.store(false);
}

std::int64_t MemoryMeter::live() const {
  if (device_.is_cpu()) return cpu_counts().live.load();
#ifdef ACTORPIPE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index()).allocated_bytes[0].current;
#else
  return 0;
#endif
}

std::int64_t MemoryMeter::peak() const {
  if (device_.is_cpu()) return cpu_counts().peak.load();
#ifdef ACTORPIPE_CUDA
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index()).allocated_bytes[0].peak;
#else
  return 0;
#endif
}

void MemoryMeter::reset_peak() {
  if (device_.is_cpu()) {
    cpu_counts().peak.store(cpu_counts().live.load());
    return;
  }
#ifdef ACTORPIPE_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
#endif
}

} // namespace actorpipe::device
