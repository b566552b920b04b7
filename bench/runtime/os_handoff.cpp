/// The operating system's thread hand-off, timed as the bench's floor under a hop.

#include "os_handoff.hpp"

#include "bench_support.hpp"
#include "train/cores.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace actorpipe::bench {

double os_handoff_us(bool sender_computes, std::optional<int> core, int passes) {
  using Clock = std::chrono::steady_clock;
  struct Slot {
    std::mutex mutex;
    std::condition_variable ready;
    bool full = false;
    Clock::time_point sent;
  };
  Slot to_receiver, to_sender;
  std::vector<double> latencies;
  auto pass = [&](Slot& slot) {
    {
      std::lock_guard<std::mutex> lock(slot.mutex);
      slot.full = true;
      slot.sent = Clock::now();
    }
    slot.ready.notify_one();
    if (core) std::this_thread::yield();
  };
  /// Waits for `slot`; the µs since it was filled.
  auto take = [&](Slot& slot) {
    std::unique_lock<std::mutex> lock(slot.mutex);
    slot.ready.wait(lock, [&] { return slot.full; });
    slot.full = false;
    return std::chrono::duration<double, std::micro>(Clock::now() - slot.sent).count();
  };
  std::thread receiver([&] {
    if (core) train::bind_thread_to(*core);
    for (int i = 0; i < passes; ++i) {
      latencies.push_back(take(to_receiver));
      pass(to_sender);
    }
  });
  std::thread([&] {
    if (core) train::bind_thread_to(*core);
    for (int i = 0; i < passes; ++i) {
      pass(to_receiver);
      if (sender_computes)
        for (const auto until = Clock::now() + std::chrono::microseconds(50); Clock::now() < until;) {
        }
      take(to_sender);
    }
  }).join();
  receiver.join();
  return median(latencies);
}

} // namespace actorpipe::bench
