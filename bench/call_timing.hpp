#pragma once

/// How long one call takes, for the planner benchmarks: the median of 5 timed batches,
/// each batch repeating the call until it lasts at least a millisecond, so that a
/// clock's resolution does not swamp searches of a few microseconds.

#include <algorithm>
#include <chrono>
#include <vector>

namespace actorpipe::bench {

/// Milliseconds per call of `call()`, which returns false when it failed (then −1).
template <class Call> double median_call_ms(Call&& call) {
  std::size_t batch = 1;
  std::vector<double> times;
  while (times.size() < 5) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < batch; ++k)
      if (!call()) return -1;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ms < 1.0 && times.empty()) {
      batch *= 2;
      continue;
    }
    times.push_back(ms / static_cast<double>(batch));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace actorpipe::bench
