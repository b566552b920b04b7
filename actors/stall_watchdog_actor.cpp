/// Stall watchdog: fails the run when one of this process's stages is stuck at its work.

#include "stall_watchdog_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>

namespace actorpipe::actors {

namespace {

struct StallWatchdogState {
  StallWatchdogConfig config;
  static inline const char* name = "stall watchdog";
};

using StallWatchdog = stall_watchdog_actor::stateful_pointer<StallWatchdogState>;

stall_watchdog_actor::behavior_type stall_watchdog_behavior(StallWatchdog self, StallWatchdogConfig config) {
  self->state.config = std::move(config);
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) {
        auto& st = self->state;
        if (auto stuck = first_stuck(st.config.stages, Clock::now(), st.config.limit)) {
          {
            std::lock_guard<std::mutex> lock(st.config.failure->mutex);
            st.config.failure->stage_stuck = true;
          }
          self->send(st.config.job, failed_atom::value, *stuck + " (its thread is stuck)");
          self->quit();
          return;
        }
        // Not busier than every 10 ms, however short the limit.
        self->delayed_send(self, std::max(st.config.limit / 4, std::chrono::milliseconds(10)), tick_atom::value);
      },
  };
}

} // namespace

stall_watchdog_actor spawn_stall_watchdog(caf::actor_system& system, StallWatchdogConfig config) {
  return system.spawn(stall_watchdog_behavior, std::move(config));
}

} // namespace actorpipe::actors
