#pragma once

/// What every runner of the runtime bench shares: the warm-up, the rate of a run's
/// timed steps, and ending the bench with a message.

#include "base/statistics.hpp"
#include <actorpipe/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace actorpipe::bench {

/// Steps before the timed ones. A run's first steps fault its memory in (on the
/// reference VM the MLP of the default job takes about 40 page faults a step over its
/// first 50 steps, then one or two), and predictions are of the steady state after.
constexpr std::uint64_t warmup_steps = 50;

struct Rate {
  double samples_per_s = 0;
  double step_ms = 0; ///< median of the timed steps
};

inline Rate rate_of(std::vector<double> step_ms, std::uint32_t batch) {
  double total = 0;
  for (double ms : step_ms)
    total += ms;
  return {static_cast<double>(batch) * static_cast<double>(step_ms.size()) / (total / 1000.0), median(step_ms)};
}

[[noreturn]] inline void fail(const std::string& what) {
  std::cerr << "runtime_bench: " << what << "\n";
  std::exit(2);
}

template <class T> T need(Result<T> result) {
  if (!result) fail(result.error().message);
  return std::move(*result);
}

} // namespace actorpipe::bench
