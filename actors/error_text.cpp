#include "error_text.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/message.hpp>

namespace actorpipe::actors {

std::string error_text(caf::actor_system& system, const caf::error& error) {
  const caf::message& context = error.context();
  if (context.size() == 1 && context.match_element<std::string>(0)) return context.get_as<std::string>(0);
  return system.render(error);
}

std::string ended_text(caf::actor_system& system, const caf::error& reason) {
  if (reason == caf::exit_reason::remote_link_unreachable)
    return "is gone: its connection closed (the process ended, or was killed)";
  return "ended: " + system.render(reason);
}

} // namespace actorpipe::actors
