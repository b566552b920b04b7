/// Group-scheduler actor: asks in, groups out, on a timer.

#include "group_scheduler_actor.hpp"

#include "base/text.hpp"
#include "sync/group_scheduler.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

namespace actorpipe::actors {

namespace {

struct SchedulerState {
  GroupSchedulerConfig config;
  std::vector<sync::GroupScheduler> stages;      ///< by stage index
  std::vector<std::vector<std::uint64_t>> steps; ///< [stage][pipeline]: the step of its latest ask
  std::vector<bool> idle;                        ///< by pipeline: no work in hand
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

/// Whether pipeline `p` cannot ask stage `s` for now: it has no work, or another of its
/// stages, waiting for an answer to step k, gives nothing of the step after the one `s`
/// last asked after, which `s` needs before it asks again. Such a stage gives nothing
/// past step k + 1 with overlap (it computes on to that step's end), past k without. A
/// forced round that waited for `p` would wait on a round that may wait on this one.
bool away(const SchedulerState& st, std::size_t s, std::size_t p) {
  if (st.idle[p]) return true;
  const std::uint64_t computed_on = st.config.scheduling.overlap ? 1 : 0;
  for (std::size_t t = 0; t < st.stages.size(); ++t)
    if (t != s && st.stages[t].waiting(p) && st.steps[t][p] + computed_on < st.steps[s][p] + 1) return true;
  return false;
}

/// Lets go whoever is due at `now` (modelled ms) in every stage, until letting some go
/// changes no one's being away, then sets each stage's timer for its next deadline.
void settle(SchedulerActor self, double now) {
  auto& st = self->state;
  const std::size_t pipelines = st.idle.size();
  for (bool released = true; released;) {
    released = false;
    for (std::size_t s = 0; s < st.stages.size(); ++s) {
      for (std::size_t p = 0; p < pipelines; ++p)
        if (!st.stages[s].waiting(p)) st.stages[s].set_away(p, away(st, s, p));
      for (const sync::Group& group : st.stages[s].close(now)) {
        released = true;
        if (group.size() == 1) {
          self->send(st.config.stages[group.front()][s], synced_atom::value, st.steps[s][group.front()], true);
          continue;
        }
        std::vector<std::uint64_t> members, steps;
        for (const std::size_t p : group) {
          members.push_back(p);
          steps.push_back(st.steps[s][p]);
        }
        // Each process with a member averages with the others (one averager, in one).
        std::vector<caf::actor_addr> told;
        for (const std::size_t p : group) {
          const averager_actor& averager = st.config.averagers.at(s).at(p);
          if (std::find(told.begin(), told.end(), averager.address()) != told.end()) continue;
          told.push_back(averager.address());
          self->send(averager, average_atom::value, members, steps);
        }
      }
    }
  }
  for (std::size_t s = 0; s < st.stages.size(); ++s) {
    const std::optional<double> due = st.stages[s].deadline();
    if (!due || (st.armed[s] && *st.armed[s] <= *due)) continue;
    st.armed[s] = *due;
    const auto wall = std::chrono::duration<double, std::milli>(std::max(0.0, *due - now) / st.config.time_scale);
    self->delayed_send(self, std::chrono::ceil<caf::timespan>(wall), tick_atom::value, static_cast<std::uint64_t>(s),
                       ++st.timers[s]);
  }
}

/// A protocol error (an unknown pipeline, a second ask) fails the run.
template <class F> void guarded(SchedulerActor self, F&& f) {
  if (self->state.failed) return;
  try {
    f();
  } catch (const std::exception& e) {
    self->state.failed = true;
    self->send(self->state.config.job, failed_atom::value, std::string("group scheduler: ") + text::message_of(e));
  }
}

group_scheduler_actor::behavior_type scheduler_behavior(SchedulerActor self, GroupSchedulerConfig config) {
  auto& st = self->state;
  const std::size_t pipelines = config.stages.size(), stages = pipelines ? config.stages.front().size() : 0;
  for (std::size_t s = 0; s < stages; ++s)
    st.stages.emplace_back(pipelines, config.scheduling);
  st.steps.assign(stages, std::vector<std::uint64_t>(pipelines, 0));
  st.idle.assign(pipelines, false);
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
          settle(self, now);
        });
      },
      [=](idle_atom, std::uint64_t p, bool idle) {
        guarded(self, [&] {
          if (p >= self->state.idle.size()) throw std::logic_error("unknown pipeline " + std::to_string(p));
          self->state.idle[p] = idle;
          settle(self, now_ms(self));
        });
      },
      [=](tick_atom, std::uint64_t s, std::uint64_t timer) {
        guarded(self, [&] {
          auto& st = self->state;
          if (timer != st.timers[s]) return; // replaced by an earlier one
          // The timer was set for that deadline: the clock's rounding never makes it early.
          const double due = *st.armed[s];
          st.armed[s].reset();
          settle(self, std::max(now_ms(self), due));
        });
      },
  };
}

} // namespace

group_scheduler_actor spawn_group_scheduler(caf::actor_system& system, GroupSchedulerConfig config) {
  return system.spawn(scheduler_behavior, std::move(config));
}

} // namespace actorpipe::actors
