/// `actorpipe worker`: a worker process of a run of several, which runs the stages the
/// coordinator's placement gives it (`actorpipe launch` starts them on one machine).

#include "commands.hpp"

#include "launch/core_list.hpp"
#include "launch/job_token.hpp"
#include "launch/process_place.hpp"
#include "launch/tls_files.hpp"
#include "processes/worker_process.hpp"

#include <iostream>
#include <unistd.h>

namespace actorpipe::cli {

namespace {

struct WorkerArguments {
  std::string coordinator;
  launch::TlsFiles tls;
  std::optional<std::string> token_file;
  std::uint32_t connect_timeout = 60;
  std::string cpus; ///< `--cpus LIST`; empty: as started
};

int run_worker(const WorkerArguments& a) {
  std::optional<launch::Endpoint> coordinator;
  if (!a.coordinator.empty()) {
    auto parsed = launch::parse_endpoint(a.coordinator, "--coordinator");
    if (!parsed) return report(parsed.error());
    coordinator = *parsed;
  } else {
    // Started by torchrun, Slurm or Open MPI: MASTER_ADDR and MASTER_PORT say where.
    auto place = launch::place_from_environment([](const char* name) { return std::getenv(name); });
    if (!place) return report(place.error());
    if (*place && (*place)->coordinator) coordinator = (*place)->coordinator;
  }
  if (!coordinator)
    return report(Error::bad_input("no coordinator: give --coordinator HOST:PORT (or MASTER_ADDR and MASTER_PORT)"));
  auto token = launch::worker_token(a.token_file, std::getenv(launch::token_variable));
  if (!token) return report(token.error());
  if (auto tls = launch::check_tls_files(a.tls); !tls) return report(tls.error());
  std::vector<int> cores;
  if (!a.cpus.empty()) {
    auto parsed = launch::parse_core_list(a.cpus, "--cpus");
    if (!parsed) return report(parsed.error());
    cores = std::move(*parsed);
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  actors::WorkerOptions options;
  options.coordinator = *coordinator;
  options.token = *token;
  options.tls = a.tls;
  options.host_name = host;
  options.connect_timeout = std::chrono::seconds(a.connect_timeout);
  options.cores = std::move(cores);
  // One write a line: the workers of one launch share its standard error.
  options.log = [](const std::string& line) { std::cerr << ("actorpipe worker: " + line + "\n"); };
  const Status done = actors::run_worker(options);
  if (!done) return report(done.error());
  return 0;
}

} // namespace

void add_tls_options(CLI::App& command, launch::TlsFiles& tls) {
  command
      .add_option("--tls-certificate", tls.certificate,
                  "TLS on the control plane: this process's certificate (PEM); with --tls-key and --tls-ca")
      ->group("TLS");
  command.add_option("--tls-key", tls.key, "the certificate's private key (PEM)")->group("TLS");
  command.add_option("--tls-ca", tls.authority, "the authority the other processes' certificates are signed by (PEM)")
      ->group("TLS");
}

void add_worker_command(CLI::App& app, Run& run) {
  auto args = std::make_shared<WorkerArguments>();
  auto* command = app.add_subcommand("worker", worker_summary);
  command->add_option("--coordinator", args->coordinator,
                      "HOST:PORT where the coordinator listens (else MASTER_ADDR:MASTER_PORT from the environment)");
  command->add_option("--token-file", args->token_file,
                      "the job's token, in a file only its owner may read (else " +
                          std::string(launch::token_variable) + ")");
  command
      ->add_option("--connect-timeout", args->connect_timeout,
                   "seconds to keep trying to reach the coordinator, which may start after its workers (default 60)")
      ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{3600}));
  command->add_option("--cpus", args->cpus,
                      "the cores this worker and its stages run on, as taskset -c lists them (0-3,8); its stage "
                      "threads are bound among them as `run` binds them (default: where it was started, unbound)");
  add_tls_options(*command, args->tls);
  command->callback([&run, args] { run = [args] { return run_worker(*args); }; });
}

} // namespace actorpipe::cli
