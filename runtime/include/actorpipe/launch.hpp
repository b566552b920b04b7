#pragma once

/// A run over several processes (`actorpipe launch`, docs/running.md, "Several
/// processes"): this process plans and coordinates, and worker processes run every
/// stage; the ones on this machine it starts itself. Its two sides: launch_training()
/// for the coordinator, run_worker() for a worker (`actorpipe worker`). Part of the
/// training runtime, as actorpipe/training.hpp is; train_job() reaches it through
/// TrainJobOptions::launch.

#include <actorpipe/export.hpp>
#include <actorpipe/training.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe {

/// TLS on a run's control plane (the coordinator's gate and every actor message between
/// the processes): this process's certificate and key, and the authority that signed
/// the others'. All three PEM files or none; none: plain TCP.
struct TlsFiles {
  std::string certificate; ///< `--tls-certificate`
  std::string key;         ///< `--tls-key`
  std::string authority;   ///< `--tls-ca`

  bool enabled() const { return !certificate.empty() || !key.empty() || !authority.empty(); }
};

/// The coordinator's side: the options of `actorpipe launch` beyond those of `run`.
struct LaunchOptions {
  std::size_t nprocs = 1;             ///< worker processes (ranks 1 … nprocs)
  std::string listen = "127.0.0.1:0"; ///< HOST:PORT where workers reach this process; port 0: any free one
  /// Of the workers, how many to start here; the others join from elsewhere with
  /// `actorpipe worker`, which needs a port in `listen` and the job's token. None: all.
  std::optional<std::size_t> local_workers;
  /// The job's token, in a file only its owner may read; else ACTORPIPE_TOKEN; made
  /// afresh when neither is given and every worker starts here.
  std::optional<std::string> token_file;
  TlsFiles tls;
  /// After a lost worker, start the workers again and resume from the last checkpoint,
  /// at most this many times; 0: the run fails.
  std::uint32_t restart = 0;
  std::chrono::milliseconds heartbeat_timeout{3000}; ///< silence after which a worker is lost
  enum class Bind {
    cores, ///< each worker started here runs on an even share of this process's cores
    none,  ///< the workers share every core
  };
  Bind bind = Bind::cores;
  /// What each worker loads: the job's file and its `--set` overrides (the
  /// coordinator's plan goes to them with its hash; they plan nothing).
  std::string job_file;
  std::vector<std::string> overrides;
  /// The program each local worker is, started as `PROGRAM worker --coordinator
  /// HOST:PORT`: an actorpipe command line. Empty: this process's own program, which
  /// is right for the actorpipe CLI and its scripts; a host application names one.
  std::string worker_program;
  /// Lines that tell where the run stands (listening, workers started, a restart);
  /// empty: standard error, "actorpipe: " before each.
  std::function<void(const std::string& line)> log;
};

/// Trains `job` as `plan` says, as run_training() does, with its stages in `launch.nprocs`
/// worker processes coordinated by this one. A lost worker fails the run, or restarts
/// it from its last checkpoint (`launch.restart`). Bad input names the option (a
/// `listen` without a port for workers from elsewhere, TLS files OpenSSL cannot read).
ACTORPIPE_EXPORT Result<RunSummary> launch_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                                    const LaunchOptions& launch);

/// A worker's side: where its coordinator is and how it proves it belongs to the job.
struct WorkerOptions {
  /// HOST:PORT of the coordinator; empty: MASTER_ADDR and MASTER_PORT from the
  /// environment (as torchrun, Slurm or Open MPI set them).
  std::string coordinator;
  /// The job's token, in a file only its owner may read; none: ACTORPIPE_TOKEN.
  std::optional<std::string> token_file;
  TlsFiles tls;
  /// How long to keep trying to reach the coordinator: a launcher starts a run's
  /// processes together, and a worker may be up before the coordinator listens.
  std::chrono::seconds connect_timeout{60};
  /// `--cpus`: the cores this process and its stages run on, as a list ("0-3,8");
  /// empty: where it was started.
  std::string cpus;
  /// Progress lines (joined, planned, ready); empty: standard error.
  std::function<void(const std::string& line)> log;
};

/// Joins the coordinator and hosts the stages it gives this process until it ends the
/// run. Ok then; an error names what failed: refused (a wrong token), a plan unlike
/// the coordinator's, a coordinator that went away.
ACTORPIPE_EXPORT Status run_worker(const WorkerOptions& options);

} // namespace actorpipe
