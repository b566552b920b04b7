/// Group-scheduler actor: asks in, groups out, on a timer.

#include "group_scheduler_actor.hpp"

#include "sync/group_scheduler.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <optional>

namespace actorpipe::actors {

namespace {

struct SchedulerState {
  GroupSchedulerConfig config;
  std::vector<sync::GroupScheduler> stages;      ///< by stage index
  std::vector<std::vector<std::uint64_t>> steps; ///< [stage][pipeline]: the step it asked after
  std::vector<std::optional<double>> armed;      ///< [stage]: when its timer fires (modelled ms)
  std::vector<std::uint64_t> timers;             ///< [stage]: the number of its latest timer
  caf::actor_clock::time_point origin;
  bool failed = false;
  static inline const char* name = "group scheduler";
};

using SchedulerActor = group_scheduler_actor::stateful_pointer<SchedulerState>;

double now_ms(SchedulerActor self) {
  return std::chrono::duration<double, std::milli>(self->clock().now() - self->state.origin).count() *
         self->state.config.time_scale;
}

/// Lets go whoever stage `s`'s scheduler has due at `now` (modelled ms), and sets the
/// timer for the next.
void dispatch(SchedulerActor self, std::size_t s, double now) {
  auto& st = self->state;
  for (const sync::Group& group : st.stages[s].close(now)) {
    const stage_actor& first = st.config.stages[group.front()][s];
    if (group.size() == 1) {
      self->send(first, synced_atom::value, st.steps[s][group.front()], true);
      continue;
    }
    std::vector<std::uint64_t> pipelines, steps;
    for (const std::size_t p : group) {
      pipelines.push_back(p);
      steps.push_back(st.steps[s][p]);
    }
    self->send(first, average_atom::value, std::move(pipelines), std::move(steps));
  }
  const std::optional<double> due = st.stages[s].deadline();
  if (!due || (st.armed[s] && *st.armed[s] <= *due)) return;
  st.armed[s] = *due;
  const auto wall = std::chrono::duration<double, std::milli>(std::max(0.0, *due - now) / st.config.time_scale);
  self->delayed_send(self, std::chrono::ceil<caf::timespan>(wall), tick_atom::value, static_cast<std::uint64_t>(s),
                     ++st.timers[s]);
}

/// A protocol error (an unknown pipeline, a second ask) fails the run.
template <class F> void guarded(SchedulerActor self, F&& f) {
  if (self->state.failed) return;
  try {
    f();
  } catch (const std::exception& e) {
    self->state.failed = true;
    self->send(self->state.config.job, failed_atom::value, std::string("group scheduler: ") + e.what());
  }
}

group_scheduler_actor::behavior_type scheduler_behavior(SchedulerActor self, GroupSchedulerConfig config) {
  auto& st = self->state;
  const std::size_t pipelines = config.stages.size(), stages = pipelines ? config.stages.front().size() : 0;
  for (std::size_t s = 0; s < stages; ++s)
    st.stages.emplace_back(pipelines, config.scheduling);
  st.steps.assign(stages, std::vector<std::uint64_t>(pipelines, 0));
  st.armed.resize(stages);
  st.timers.assign(stages, 0);
  st.config = std::move(config);
  st.origin = self->clock().now();
  return {
      [=](ask_atom, std::uint64_t s, std::uint64_t p, std::uint64_t step) {
        guarded(self, [&] {
          auto& st = self->state;
          if (s >= st.stages.size()) throw std::logic_error("an ask for unknown stage " + std::to_string(s));
          const double now = now_ms(self);
          st.stages[s].arrive(p, now);
          st.steps[s][p] = step;
          dispatch(self, s, now);
        });
      },
      [=](idle_atom, std::uint64_t p, bool idle) {
        guarded(self, [&] {
          const double now = now_ms(self);
          for (std::size_t s = 0; s < self->state.stages.size(); ++s) {
            self->state.stages[s].set_idle(p, idle, now);
            dispatch(self, s, now);
          }
        });
      },
      [=](tick_atom, std::uint64_t s, std::uint64_t timer) {
        guarded(self, [&] {
          auto& st = self->state;
          if (timer != st.timers[s]) return; // replaced by an earlier one
          // The timer was set for that deadline: the clock's rounding never makes it early.
          const double due = *st.armed[s];
          st.armed[s].reset();
          dispatch(self, s, std::max(now_ms(self), due));
        });
      },
  };
}

} // namespace

group_scheduler_actor spawn_group_scheduler(caf::actor_system& system, GroupSchedulerConfig config) {
  return system.spawn(scheduler_behavior, std::move(config));
}

} // namespace actorpipe::actors
