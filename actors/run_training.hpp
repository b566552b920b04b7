#pragma once

/// run_training() with what only this tree's CLI and tests set: a failure injected
/// into a stage, to check that a failing stage ends the run, named, instead of
/// hanging it (`actorpipe run --inject-failure STAGE:STEP`).

#include "injected_failure.hpp"

#include <actorpipe/training.hpp>

#include <optional>

namespace actorpipe::actors {

Result<RunSummary> run_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                std::optional<InjectedFailure> inject_failure);

} // namespace actorpipe::actors
