/// Averager actor: a group in, its members' changes made, the members released.

#include "averager_actor.hpp"

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
          self->send(st.config.job, failed_atom::value,
                     "averaging of stage " + std::to_string(st.config.stage) + ": " + e.what());
          return;
        }
        for (std::size_t i = 0; i < pipelines.size(); ++i)
          self->send(st.config.stages[pipelines[i]], synced_atom::value, steps[i], true);
      },
  };
}

} // namespace

averager_actor spawn_averager(caf::actor_system& system, AveragerConfig config) {
  if (config.detached) return system.spawn<caf::detached>(averager_behavior, std::move(config));
  return system.spawn(averager_behavior, std::move(config));
}

} // namespace actorpipe::actors
