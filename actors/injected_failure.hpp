#pragma once

/// A failure injected into a stage (RunOptions::inject_failure, `actorpipe run
/// --inject-failure STAGE:STEP`): how the tests check that a failing stage, or a lost
/// worker process, ends the run, named, instead of hanging it.

#include <actorpipe/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace actorpipe::actors {

/// What stage `stage` of every pipeline does at its first action of step `step`
/// (1-based).
struct InjectedFailure {
  enum class Effect : std::uint8_t {
    throw_error, ///< `STAGE:STEP`: the stage throws
    /// `STAGE:STEP:exit` (a run of several processes): its process ends at once, as a
    /// killed worker does
    exit_process,
    /// `STAGE:STEP:hang`: its process stops (SIGSTOP), as a hung worker that keeps its
    /// connections open, which only heartbeats tell from a slow one
    hang_process,
    /// `STAGE:STEP:stall`: the stage's thread blocks for good in its action, as one
    /// stuck in a kernel or a deadlock, while its process (a worker's answers
    /// heartbeats) goes on; only the stage's own activity tells (stage_activity.hpp)
    stall_thread,
    /// `STAGE:STEP:stall-sync`: the stage's thread blocks for good in its sync round
    /// (a collective whose peer never comes, a sync policy that never returns)
    stall_sync,
  };
  std::size_t stage = 0;
  std::uint64_t step = 1;
  Effect effect = Effect::throw_error;
};

/// "STAGE:STEP", "STAGE:STEP:stall" or "STAGE:STEP:stall-sync", and in a run of several
/// processes (`processes`) also "STAGE:STEP:exit" or "STAGE:STEP:hang", with STAGE one
/// of the plan's `stages` and STEP from 1 to max_steps. Bad input otherwise.
Result<InjectedFailure> parse_injected_failure(const std::string& text, std::size_t stages, bool processes);

} // namespace actorpipe::actors
