#pragma once

/// The check of asynchronous elastic averaging's settings, shared by the planner's dry
/// round 0 and the run (train::SyncExecutor), as scheduling_problem() is for SDPipe's.

#include <actorpipe/plugin.hpp>

#include <optional>
#include <string>

namespace actorpipe::sync {

/// Why asynchronous elastic averaging could not run with `round`'s rate and period;
/// none when it can. Each pipeline moves alone with the centre, so any rate in (0, 1]
/// keeps the centre between the two.
inline std::optional<std::string> elastic_problem(const SyncRound& round) {
  if (!(round.alpha > 0 && round.alpha <= 1))
    return "elastic rate " + number_text(round.alpha) + " (it must be in (0, 1])";
  if (round.period == 0) return std::string("period 0 (a pipeline moves every this many steps, at least 1)");
  return std::nullopt;
}

} // namespace actorpipe::sync
