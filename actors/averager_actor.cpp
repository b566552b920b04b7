/// Averager actor: a group in, its members' changes made, the members released; and
/// its relay to the averagers of several processes.

#include "averager_actor.hpp"

#include "base/text.hpp"

#include <caf/all.hpp>

#include <string>

namespace actorpipe::actors {

namespace {

struct AveragerState {
  AveragerConfig config;
  bool failed = false;
  static inline const char* name = "averager";
};

using AveragerActor = averager_actor::stateful_pointer<AveragerState>;

averager_actor::behavior_type averager_behavior(AveragerActor self, AveragerConfig config) {
  self->state.config = std::move(config);
  return {
      [=](average_atom, const std::vector<std::uint64_t>& pipelines, const std::vector<std::uint64_t>& steps) {
        auto& st = self->state;
        if (st.failed) return;
        try {
          if (pipelines.size() != steps.size()) throw std::logic_error("a group whose steps do not match its members");
          for (const std::uint64_t p : pipelines)
            if (p >= st.config.stages.size()) throw std::logic_error("a group with pipeline " + std::to_string(p));
          st.config.average(std::vector<std::size_t>(pipelines.begin(), pipelines.end()));
        } catch (const std::exception& e) {
          st.failed = true;
          const std::string what = "averaging of stage " + std::to_string(st.config.stage) + ": " + text::message_of(e);
          if (st.config.job) self->send(st.config.job, failed_atom::value, what);
          self->quit(caf::make_error(caf::sec::runtime_error, what)); // its watcher hears
          return;
        }
        for (std::size_t i = 0; i < pipelines.size(); ++i)
          if (const stage_actor& member = st.config.stages[pipelines[i]]) // the others are elsewhere
            self->send(member, synced_atom::value, steps[i], true);
      },
  };
}

averager_actor::behavior_type relay_behavior(averager_actor::pointer self, std::vector<averager_actor> averagers) {
  return {
      [=](average_atom, const std::vector<std::uint64_t>& pipelines, const std::vector<std::uint64_t>& steps) {
        for (const averager_actor& averager : averagers)
          self->send(averager, average_atom::value, pipelines, steps);
      },
  };
}

} // namespace

averager_actor spawn_averager_relay(caf::actor_system& system, std::vector<averager_actor> averagers) {
  return system.spawn(relay_behavior, std::move(averagers));
}

averager_actor spawn_averager(caf::actor_system& system, AveragerConfig config) {
  if (config.detached) return system.spawn<caf::detached>(averager_behavior, std::move(config));
  return system.spawn(averager_behavior, std::move(config));
}

} // namespace actorpipe::actors
