#pragma once

/// A failure injected into a stage (`actorpipe run --inject-failure STAGE:STEP`): how
/// the CLI's tests check that a failing stage, or a lost worker process, ends the run,
/// named, instead of hanging it. Not part of the public API.

#include <cstddef>
#include <cstdint>

namespace actorpipe::actors {

/// Makes stage `stage` of every pipeline throw at its first action of step `step`
/// (1-based); with `exit`, ends its process there at once instead, as a worker that is
/// killed (`--inject-failure STAGE:STEP:exit`, in a run of several processes).
struct InjectedFailure {
  std::size_t stage = 0;
  std::uint64_t step = 1;
  bool exit = false;
};

} // namespace actorpipe::actors
