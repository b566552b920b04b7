#pragma once

/// What one stage actor did, as spans for trace.json. Each actor writes only its own
/// record, and the run reads them after the actors are done: no locks.

#include <chrono>
#include <string>
#include <vector>

namespace actorpipe::actors {

struct TraceSpan {
  const char* kind; ///< "forward", "backward", "send", "wait", "sync" or "step" (the optimizer's)
  std::size_t micro_batch;
  double start_us;
  double duration_us;
};

struct StageTrace {
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  std::vector<TraceSpan> spans;
};

using Clock = std::chrono::steady_clock;

inline double microseconds_since(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - origin).count();
}

} // namespace actorpipe::actors
