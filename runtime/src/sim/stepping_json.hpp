#pragma once

/// A plan's sync stepping as the plan and simulation reports write it, one form for both.

#include <actorpipe/plan.hpp>

#include <nlohmann/json.hpp>

namespace actorpipe {

/// {"asynchronous": true, "staleness": 2}; staleness null where there is no bound.
inline nlohmann::json stepping_json(const SyncStepping& stepping) {
  return {{"asynchronous", stepping.asynchronous},
          {"staleness", stepping.staleness == SyncStepping::unbounded ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(stepping.staleness)}};
}

} // namespace actorpipe
