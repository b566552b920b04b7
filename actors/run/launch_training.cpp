/// launch_training() and run_worker() (actorpipe/launch.hpp): the two sides of a run of
/// several processes, as the CLI's `launch` and `worker`, Lua and host applications call
/// them.

#include <actorpipe/launch.hpp>

#include "processes/local_launch.hpp"
#include "processes/worker_process.hpp"
#include "run/run_training.hpp"

#include "base/boundary.hpp"
#include "launch/core_list.hpp"
#include "launch/job_token.hpp"
#include "launch/process_place.hpp"
#include "launch/tls_files.hpp"

#include <cstdlib>
#include <iostream>

#include <unistd.h>

namespace actorpipe {

Result<RunSummary> launch_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                   const LaunchOptions& launch) {
  return at_boundary("launch", [&]() -> Result<RunSummary> {
    if (launch.nprocs == 0) return Error::bad_input("launch: nprocs must be at least 1 (worker processes)");
    auto local = actors::LocalLaunch::prepare(launch);
    ACTORPIPE_TRY(local);
    auto summary = actors::run_training(job, plan, options, &(*local)->coordinate());
    // A failed run's workers get less time to end: one may be hung.
    if (auto ended = (*local)->finish(static_cast<bool>(summary)); summary && !ended) return std::move(ended).error();
    return summary;
  });
}

Status run_worker(const WorkerOptions& options) {
  return at_boundary("worker", [&]() -> Status {
    actors::WorkerProcessOptions worker;
    if (!options.coordinator.empty()) {
      auto parsed = launch::parse_endpoint(options.coordinator, "--coordinator");
      ACTORPIPE_TRY(parsed);
      worker.coordinator = *parsed;
    } else {
      // Started by torchrun, Slurm or Open MPI: MASTER_ADDR and MASTER_PORT say where.
      auto place = launch::place_from_environment([](const char* name) { return std::getenv(name); });
      ACTORPIPE_TRY(place);
      if (!*place || !(*place)->coordinator)
        return Error::bad_input("no coordinator: give --coordinator HOST:PORT (or MASTER_ADDR and MASTER_PORT)");
      worker.coordinator = *(*place)->coordinator;
    }
    auto token = launch::worker_token(options.token_file, std::getenv(launch::token_variable));
    ACTORPIPE_TRY(token);
    worker.token = std::move(*token);
    ACTORPIPE_TRY(launch::check_tls_files(options.tls));
    worker.tls = options.tls;
    if (!options.cpus.empty()) {
      auto cores = launch::parse_core_list(options.cpus, "--cpus");
      ACTORPIPE_TRY(cores);
      worker.cores = std::move(*cores);
    }
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    worker.host_name = host;
    worker.connect_timeout = options.connect_timeout;
    // One write a line: the workers of one launch share its standard error.
    worker.log =
        options.log ? options.log : [](const std::string& line) { std::cerr << ("actorpipe worker: " + line + "\n"); };
    return actors::run_worker(worker);
  });
}

} // namespace actorpipe
