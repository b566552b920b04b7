#pragma once

/// What one stage actor did, as spans for trace.json. Each actor writes only its own
/// record, and the run reads them after the actors are done; or, where a stage's thread
/// is stuck at its work and its actor never ends, copies them as they are, which a lock
/// of each record's own makes safe (uncontended but for that copy). A record keeps the
/// latest steps only (output.trace_steps), so a long run's trace stays a size that a
/// viewer opens and its memory stays flat.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>

#include <time.h>

namespace actorpipe::actors {

/// What a stage actor spent a span on; `step` is the optimizer's step. `stuck`: the work
/// a stage's thread never finished, up to when the run gave up on it.
/// input_gradient and weight_gradient: a split backward's halves (I, W).
enum class SpanKind { forward, backward, send, wait, sync, step, stuck, input_gradient, weight_gradient };

constexpr const char* to_string(SpanKind kind) {
  constexpr const char* names[] = {"forward", "backward", "send",           "wait",           "sync",
                                   "step",    "stuck",    "input gradient", "weight gradient"};
  return names[static_cast<int>(kind)];
}

struct TraceSpan {
  SpanKind kind;
  std::uint64_t step;
  std::size_t micro_batch;
  double start_us;
  double duration_us;
  /// The CPU time the actor's thread got during a forward or backward span: the span
  /// less what it waited for a core it shares. Negative for other kinds.
  double cpu_us = -1;
};

struct StageTrace {
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  std::uint64_t keep_steps = 0; ///< the spans of this many latest steps are kept; 0: every step's
  std::deque<TraceSpan> spans;
  std::size_t peak_stashed = 0; ///< the most micro-batches whose activations it held at once

  StageTrace() = default;
  /// A copy of the record as it is now, even while its actor writes to it.
  StageTrace(const StageTrace& other) { *this = other; }
  StageTrace& operator=(const StageTrace& other) {
    if (this == &other) return *this;
    std::scoped_lock both(guard_, other.guard_);
    pipeline = other.pipeline;
    stage = other.stage;
    keep_steps = other.keep_steps;
    spans = other.spans;
    peak_stashed = other.peak_stashed;
    return *this;
  }

  /// Adds a span of the current step, forgetting the steps that leave the window.
  void add(const TraceSpan& span) {
    std::lock_guard<std::mutex> lock(guard_);
    spans.push_back(span);
    if (keep_steps == 0) return;
    while (spans.front().step + keep_steps <= span.step)
      spans.pop_front();
  }
  /// Raises peak_stashed to `stashed`, where that is more.
  void held(std::size_t stashed) {
    std::lock_guard<std::mutex> lock(guard_);
    peak_stashed = std::max(peak_stashed, stashed);
  }

private:
  mutable std::mutex guard_;
};

using Clock = std::chrono::steady_clock;

inline double microseconds_since(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - origin).count();
}

/// The calling thread's CPU time so far, in microseconds.
inline double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

} // namespace actorpipe::actors
