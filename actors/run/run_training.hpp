#pragma once

/// run_training() with what only this tree's CLI and tests set: a failure injected
/// into a stage, to check that a failing stage (or a lost worker process) ends the run,
/// named, instead of hanging it (`actorpipe run --inject-failure STAGE:STEP`); and the
/// coordination of a run of several processes (`actorpipe launch`).

#include "processes/coordinator.hpp"
#include "injected_failure.hpp"

#include <actorpipe/training.hpp>

#include <optional>

namespace actorpipe::actors {

/// With `coordinate`, the run is one of several processes, coordinated by this one:
/// workers run every stage (actorpipe launch, docs/running.md). A lost worker fails
/// it, or restarts it from its last checkpoint (`coordinate->restarts`); an injected
/// failure strikes the first attempt only.
Result<RunSummary> run_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                std::optional<InjectedFailure> inject_failure,
                                const CoordinateOptions* coordinate = nullptr);

} // namespace actorpipe::actors
