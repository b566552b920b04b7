#pragma once

/// The worker processes a launch starts on this machine: an actorpipe command line (this
/// program again, in the CLI), as `worker --coordinator HOST:PORT`, each in its own process group with this one's
/// environment and the job's token in ACTORPIPE_TOKEN. The token goes in no file: a
/// coordinator killed outright leaves nothing of it behind, and a process's environment
/// is as much its owner's alone as a 0600 file. Whatever is left of the workers when
/// the object goes is stopped (SIGTERM, then SIGKILL) and reaped.

#include <actorpipe/error.hpp>

#include <string>
#include <vector>

#include <sys/types.h>

namespace actorpipe::actors {

class LocalWorkers {
public:
  LocalWorkers() = default;
  ~LocalWorkers();
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  /// Starts `count` workers of the coordinator at `coordinator` ("HOST:PORT"), each the
  /// program `program`, with `flags` added to their command lines; worker i bound to
  /// cores[i] (`--cpus`) where `cores` has it and it is not empty.
  Status start(const std::string& program, std::size_t count, const std::string& coordinator, const std::string& token,
               const std::vector<std::string>& flags = {}, const std::vector<std::vector<int>>& cores = {});

  /// Waits for the workers to end, at most `seconds`; the ones that did not are
  /// stopped. A worker that failed is named in the error. Then there are none: start()
  /// may start others.
  Status wait(double seconds);

private:
  std::vector<pid_t> pids_;
};

} // namespace actorpipe::actors
