#pragma once

/// How a measured profile was measured, in words: what `actorpipe profile`, a `run` or
/// `plan` that measures first, and a script that does, tell their users.

#include <actorpipe/model_profile.hpp>

#include <cstdint>
#include <string>

namespace actorpipe {

/// Its warm-up passes and the spread of its `repeats` timed passes, with a warning on
/// a second line ("actorpipe: warning: …") where the spread is wide; `more_repeats`
/// says how to ask for more ("--repeats", or a script's option).
std::string describe_measurement(const ModelProfile& profile, std::uint32_t repeats,
                                 const std::string& more_repeats = "--repeats");

} // namespace actorpipe
