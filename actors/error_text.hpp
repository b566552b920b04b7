#pragma once

/// The text of an error an actor answered with, or of why an actor ended, for a user's
/// message.

#include <caf/fwd.hpp>

#include <string>

namespace actorpipe::actors {

/// What `error` says: the text the actor that made it put in it (this runtime's actors
/// explain a refusal or a failure in one string), else CAF's rendering of its code and
/// context (`system_error(request_timeout)`).
std::string error_text(caf::actor_system& system, const caf::error& error);

/// How an actor that ended for `reason` (its down message's) ended, to follow its name:
/// "is gone: its connection closed (…)" where its process's connection closed, else
/// "ended: " and the reason.
std::string ended_text(caf::actor_system& system, const caf::error& reason);

} // namespace actorpipe::actors
