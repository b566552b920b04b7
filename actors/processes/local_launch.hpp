#pragma once

/// What a launch adds to a run in the coordinator's process (LaunchOptions): the job's
/// token (made here, or the user's), the coordinator's options, and the worker
/// processes on this machine, started as the coordinator listens, and started again
/// when it restarts a run after a lost worker.

#include "processes/coordinator.hpp"
#include "processes/local_workers.hpp"

#include <actorpipe/launch.hpp>

#include <memory>
#include <string>
#include <vector>

namespace actorpipe::actors {

class LocalLaunch {
public:
  /// Checks the options and makes the token (or takes the user's).
  static Result<std::unique_ptr<LocalLaunch>> prepare(const LaunchOptions& options);
  ~LocalLaunch() = default; ///< workers still there are stopped
  LocalLaunch(const LocalLaunch&) = delete;
  LocalLaunch& operator=(const LocalLaunch&) = delete;

  const CoordinateOptions& coordinate() const { return coordinate_; }

  /// After the run: waits for the workers to end (a failed run's survivors get less
  /// time: one may be hung).
  Status finish(bool run_succeeded);

private:
  LocalLaunch() = default;

  CoordinateOptions coordinate_;
  LocalWorkers workers_;
  std::size_t local_ = 0;               ///< workers started here
  std::vector<std::vector<int>> cores_; ///< by local worker: its share (Bind::cores), else none
  std::size_t starts_ = 0;
};

} // namespace actorpipe::actors
