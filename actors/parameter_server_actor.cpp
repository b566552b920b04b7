/// Parameter-server actor: pushes in, a step on the server's weights, answers out.

#include "parameter_server_actor.hpp"

#include "base/text.hpp"
#include "sync/server_gate.hpp"

#include <caf/all.hpp>

#include <optional>

namespace actorpipe::actors {

namespace {

struct ServerState {
  ParameterServerConfig config;
  std::optional<sync::ServerGate> gate;
  std::vector<std::uint64_t> steps; ///< by pipeline: the step of its latest push
  bool failed = false;
  static inline const char* name = "parameter server";
};

using ServerActor = parameter_server_actor::stateful_pointer<ServerState>;

/// Applies what the gate lets through and answers whom it releases; a failure (from
/// the gate's protocol checks or from the tensors) fails the run.
template <class Event> void handle(ServerActor self, Event&& event) {
  auto& st = self->state;
  if (st.failed) return;
  try {
    const sync::ServerDecision d = event(*st.gate);
    if (!st.config.copies.empty()) {
      if (d.apply.empty() && d.answer.empty()) return;
      std::vector<std::uint64_t> steps;
      for (const std::size_t p : d.answer)
        steps.push_back(st.steps[p]);
      const std::vector<std::uint64_t> apply(d.apply.begin(), d.apply.end()), answer(d.answer.begin(), d.answer.end());
      for (const server_copy_actor& copy : st.config.copies)
        self->send(copy, serve_atom::value, apply, answer, steps);
      return;
    }
    if (!d.apply.empty()) st.config.serve(d.apply);
    for (const std::size_t p : d.answer)
      self->send(st.config.stages[p], synced_atom::value, st.steps[p], true);
  } catch (const std::exception& e) {
    st.failed = true;
    self->send(st.config.job, failed_atom::value,
               "parameter server of stage " + std::to_string(st.config.stage) + ": " + text::message_of(e));
  }
}

parameter_server_actor::behavior_type server_behavior(ServerActor self, ParameterServerConfig config) {
  auto& st = self->state;
  st.gate.emplace(config.stages.size(), config.staleness);
  st.steps.assign(config.stages.size(), 0);
  st.config = std::move(config);
  return {
      [=](ask_atom, std::uint64_t s, std::uint64_t p, std::uint64_t step) {
        handle(self, [&](sync::ServerGate& gate) {
          if (s != self->state.config.stage)
            throw std::logic_error("a push for stage " + std::to_string(s) + " reached this one");
          if (p < self->state.steps.size()) self->state.steps[p] = step;
          return gate.push(p);
        });
      },
      [=](idle_atom, std::uint64_t p, bool idle) {
        handle(self, [&](sync::ServerGate& gate) { return gate.set_away(p, idle); });
      },
  };
}

} // namespace

parameter_server_actor spawn_parameter_server(caf::actor_system& system, ParameterServerConfig config) {
  if (config.detached) return system.spawn<caf::detached>(server_behavior, std::move(config));
  return system.spawn(server_behavior, std::move(config));
}

} // namespace actorpipe::actors
