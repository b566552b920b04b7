/// Stage activity: what a watchdog reads of a stage's thread.

#include "stage_activity.hpp"

#include <cstdio>

namespace actorpipe::actors {

std::optional<std::string> stuck_text(const StageActivity& activity, Clock::time_point now,
                                      std::chrono::milliseconds limit) {
  const std::int64_t since = activity.busy_since_ns.load(std::memory_order_acquire);
  if (since == 0) return std::nullopt;
  const auto busy = now - Clock::time_point(Clock::duration(since));
  if (busy < limit) return std::nullopt;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", std::chrono::duration<double>(busy).count());
  const std::string step = std::to_string(activity.step.load(std::memory_order_relaxed));
  const std::string what = activity.work.load(std::memory_order_relaxed) == StageWork::sync_round
                               ? " has been in the sync round of step " + step
                               : " has worked on step " + step;
  return "stage " + std::to_string(activity.stage) + " of pipeline " + std::to_string(activity.pipeline) + what +
         " for " + seconds + " s without finishing";
}

std::optional<std::string> first_stuck(const std::vector<const StageActivity*>& watched, Clock::time_point now,
                                       std::chrono::milliseconds limit) {
  for (const StageActivity* activity : watched)
    if (auto stuck = stuck_text(*activity, now, limit)) return stuck;
  return std::nullopt;
}

} // namespace actorpipe::actors
