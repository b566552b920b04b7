#pragma once

/// Whether a stage actor's thread is at work and since when, for a watchdog on another
/// thread (a worker's stage host answering heartbeats, or the stall watchdog of the
/// process that runs the job) to tell a stage stuck in its work (a kernel that never
/// returns, a deadlock) from one waiting for its next message. Heartbeats alone miss
/// it: the worker's other threads still answer them.

#include "stage_trace.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::actors {

/// What a stage's thread is busy with, for the message that names a stuck one.
enum class StageWork : std::uint8_t {
  compute,    ///< an action of its schedule, or its optimizer step
  sync_round, ///< its stage index's sync round (replica_barrier.hpp), run on its thread
};

struct StageActivity {
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  /// Clock time (ns since its epoch) the thread went into its current work; 0: idle.
  std::atomic<std::int64_t> busy_since_ns{0};
  std::atomic<std::uint64_t> step{0}; ///< the step of that work
  std::atomic<StageWork> work{StageWork::compute};
};

/// Marks `activity` (none: nothing) busy with `step` for the scope. Nested scopes leave
/// the outermost's start: the work is one.
class BusyScope {
public:
  BusyScope(StageActivity* activity, std::uint64_t step, StageWork work = StageWork::compute) {
    if (!activity || activity->busy_since_ns.load(std::memory_order_relaxed) != 0) return;
    activity_ = activity;
    activity_->step.store(step, std::memory_order_relaxed);
    activity_->work.store(work, std::memory_order_relaxed);
    activity_->busy_since_ns.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  }
  ~BusyScope() {
    if (activity_) activity_->busy_since_ns.store(0, std::memory_order_release);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

private:
  StageActivity* activity_ = nullptr;
};

/// "stage 1 of pipeline 0 has worked on step 57 for 61.0 s without finishing" (or "has
/// been in the sync round of step 57 for …") where `activity` has been busy for `limit`
/// or longer at `now`; nothing otherwise.
std::optional<std::string> stuck_text(const StageActivity& activity, Clock::time_point now,
                                      std::chrono::milliseconds limit);

/// stuck_text() of the first of `watched` that is stuck; nothing where none is.
std::optional<std::string> first_stuck(const std::vector<const StageActivity*>& watched, Clock::time_point now,
                                       std::chrono::milliseconds limit);

} // namespace actorpipe::actors
