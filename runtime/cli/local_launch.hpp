#pragma once

/// What `actorpipe launch` adds to a run: the job's token (made here, or the user's),
/// the coordinator's options, and the worker processes on this machine,
/// started as the coordinator listens, and started again when it restarts a run after
/// a lost worker.

#include "local_workers.hpp"

#include <actorpipe/error.hpp>

#include "processes/coordinator.hpp"
#include "launch/tls_files.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::cli {

/// launch's own flags.
struct LaunchArguments {
  std::size_t nprocs = 0;             ///< worker processes
  std::string listen = "127.0.0.1:0"; ///< where the coordinator listens for them
  /// Of the workers, those started here (the others join from elsewhere with
  /// `actorpipe worker`); none: all.
  std::optional<std::size_t> local_workers;
  /// The job's token, given (else ACTORPIPE_TOKEN; made afresh when neither is and
  /// every worker is local).
  std::optional<std::string> token_file;
  launch::TlsFiles tls;           ///< TLS on the control plane; none: plain TCP
  std::uint32_t restart = 0;      ///< restarts after a lost worker
  double heartbeat_timeout = 3.0; ///< seconds a worker may stay silent
  /// `--bind`: "cores" gives each local worker an even share of this process's cores
  /// (launch::even_share), "none" leaves them where they start.
  std::string bind = "cores";
};

class LocalLaunch {
public:
  /// Checks the flags and makes the token (or takes the user's); `job_file` and
  /// `overrides` are what each worker loads.
  static Result<std::unique_ptr<LocalLaunch>> prepare(const LaunchArguments& arguments, const std::string& job_file,
                                                      std::vector<std::string> overrides);
  ~LocalLaunch() = default; ///< workers still there are stopped
  LocalLaunch(const LocalLaunch&) = delete;
  LocalLaunch& operator=(const LocalLaunch&) = delete;

  const actors::CoordinateOptions& coordinate() const { return coordinate_; }

  /// After the run: waits for the workers to end (a failed run's survivors get less
  /// time: one may be hung).
  Status finish(bool run_succeeded);

private:
  LocalLaunch() = default;

  actors::CoordinateOptions coordinate_;
  LocalWorkers workers_;
  std::size_t local_ = 0;               ///< workers started here
  std::vector<std::vector<int>> cores_; ///< by local worker: its share (`--bind cores`), else none
  std::size_t starts_ = 0;
};

} // namespace actorpipe::cli
