#pragma once

/// run_training() as the coordinator of a run of several processes (launch_training(),
/// `actorpipe launch`) or in one.

#include "processes/coordinator.hpp"

#include <actorpipe/training.hpp>

#include <optional>

namespace actorpipe::actors {

/// With `coordinate`, the run is one of several processes, coordinated by this one:
/// workers run every stage (actorpipe launch, docs/running.md). A lost worker fails
/// it, or restarts it from its last checkpoint (`coordinate->restarts`); an injected
/// failure (RunOptions::inject_failure) strikes the first attempt only.
Result<RunSummary> run_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                const CoordinateOptions* coordinate = nullptr);

} // namespace actorpipe::actors
