#include "processes/local_launch.hpp"

#include "launch/core_list.hpp"
#include "launch/job_token.hpp"
#include "train/cores.hpp"

#include <cstdlib>
#include <iostream>

namespace actorpipe::actors {

Result<std::unique_ptr<LocalLaunch>> LocalLaunch::prepare(const LaunchOptions& arguments) {
  auto listen = launch::parse_endpoint(arguments.listen, "--listen", true);
  if (!listen) return listen.error();
  if (auto tls = launch::check_tls_files(arguments.tls); !tls) return std::move(tls).error();
  const std::size_t local = arguments.local_workers.value_or(arguments.nprocs);
  if (local > arguments.nprocs)
    return Error::bad_input("--local-workers " + std::to_string(local) + ": more than the run's " +
                            std::to_string(arguments.nprocs) + " workers (--nprocs)");
  // Workers from elsewhere must be given the token: the user's, not one made here.
  const char* variable = std::getenv(launch::token_variable);
  std::string token;
  if (arguments.token_file || (variable && *variable)) {
    auto given = launch::worker_token(arguments.token_file, variable);
    if (!given) return given.error();
    token = *given;
  } else if (local < arguments.nprocs) {
    return Error::bad_input("workers that join from elsewhere need the job's token: give --token-file FILE (or " +
                            std::string(launch::token_variable) + ") here and to them");
  } else {
    token = launch::new_token();
  }
  if (local < arguments.nprocs && arguments.restart > 0)
    return Error::bad_input("--restart " + std::to_string(arguments.restart) +
                            ": a restart starts only the workers started here; with --local-workers " +
                            std::to_string(local) + " of " + std::to_string(arguments.nprocs) +
                            ", the others' launcher must restart them");
  if (local < arguments.nprocs && listen->port == 0)
    return Error::bad_input("--listen " + arguments.listen +
                            ": workers that join from elsewhere need a port to go to (HOST:PORT, not port 0)");
  std::unique_ptr<LocalLaunch> launch(new LocalLaunch());
  CoordinateOptions& c = launch->coordinate_;
  c.workers = arguments.nprocs;
  c.token = token;
  c.listen = *listen;
  c.job_file = arguments.job_file;
  c.overrides = arguments.overrides;
  c.restarts = arguments.restart;
  c.tls = arguments.tls;
  c.heartbeat_timeout = arguments.heartbeat_timeout;
  // One write a line: the workers started here share this process's standard error.
  c.log = arguments.log ? arguments.log : [](const std::string& line) { std::cerr << ("actorpipe: " + line + "\n"); };
  launch->local_ = local;
  if (arguments.bind == LaunchOptions::Bind::cores) {
    // Each its own cores, as MPI launchers bind their ranks: the stage threads of two
    // workers sharing every core cost each other caches and switches between processes
    // (docs/running.md, "Several processes").
    const std::vector<int> cores = train::usable_cores();
    for (std::size_t i = 0; i < local; ++i)
      launch->cores_.push_back(launch::even_share(cores, i, local));
  }
  LocalLaunch* self = launch.get();
  // The local workers present the same certificate as this process.
  std::vector<std::string> flags;
  if (arguments.tls.enabled())
    flags = {"--tls-certificate", arguments.tls.certificate, "--tls-key", arguments.tls.key,
             "--tls-ca",          arguments.tls.authority};
  const std::string program = arguments.worker_program.empty() ? "/proc/self/exe" : arguments.worker_program;
  c.on_listening = [self, flags, program](const launch::Endpoint& gate) {
    const std::size_t n = self->local_, elsewhere = self->coordinate_.workers - n;
    // A restart: the lost run's workers are gone, or told to go; one that hangs is stopped.
    if (self->starts_++ > 0) (void)self->workers_.wait(2);
    self->coordinate_.log("listening on " + gate.text() + "; starting " + std::to_string(n) + " worker" +
                          (n == 1 ? "" : "s") +
                          (elsewhere > 0 ? ", waiting for " + std::to_string(elsewhere) + " from elsewhere" : ""));
    if (n == 0) return;
    if (auto started = self->workers_.start(program, n, gate.text(), self->coordinate_.token, flags, self->cores_);
        !started)
      self->coordinate_.log(started.error().message);
  };
  return launch;
}

Status LocalLaunch::finish(bool run_succeeded) { return workers_.wait(run_succeeded ? 30 : 2); }

} // namespace actorpipe::actors
