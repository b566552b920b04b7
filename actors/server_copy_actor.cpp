/// Server copy actor: a parameter server's decision in, this process's copy stepped,
/// its pushers answered.

#include "server_copy_actor.hpp"

#include "base/text.hpp"

#include <caf/all.hpp>

#include <string>

namespace actorpipe::actors {

namespace {

server_copy_actor::behavior_type copy_behavior(server_copy_actor::pointer self, ServerCopyConfig config) {
  return {
      [=](serve_atom, const std::vector<std::uint64_t>& apply, const std::vector<std::uint64_t>& answer,
          const std::vector<std::uint64_t>& steps) {
        try {
          if (answer.size() != steps.size()) throw std::logic_error("answers whose steps do not match them");
          for (const auto* pipelines : {&apply, &answer})
            for (const std::uint64_t p : *pipelines)
              if (p >= config.stages.size()) throw std::logic_error("a decision with pipeline " + std::to_string(p));
          if (!apply.empty()) config.serve(std::vector<std::size_t>(apply.begin(), apply.end()));
        } catch (const std::exception& e) {
          self->quit(caf::make_error(caf::sec::runtime_error, "parameter server of stage " +
                                                                  std::to_string(config.stage) + ": " +
                                                                  text::message_of(e)));
          return;
        }
        for (std::size_t i = 0; i < answer.size(); ++i)
          if (const stage_actor& pusher = config.stages[answer[i]]) // the others are elsewhere
            self->send(pusher, synced_atom::value, steps[i], true);
      },
  };
}

} // namespace

server_copy_actor spawn_server_copy(caf::actor_system& system, ServerCopyConfig config) {
  if (config.detached) return system.spawn<caf::detached>(copy_behavior, std::move(config));
  return system.spawn(copy_behavior, std::move(config));
}

} // namespace actorpipe::actors
