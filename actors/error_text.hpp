#pragma once

/// The text of an error an actor answered with, for a user's message.

#include <caf/fwd.hpp>

#include <string>

namespace actorpipe::actors {

/// What `error` says: the text the actor that made it put in it (this runtime's actors
/// explain a refusal or a failure in one string), else CAF's rendering of its code and
/// context (`system_error(request_timeout)`).
std::string error_text(caf::actor_system& system, const caf::error& error);

} // namespace actorpipe::actors
