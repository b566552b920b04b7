/// `actorpipe worker`: a worker process of a run of several, which runs the stages the
/// coordinator's placement gives it (`actorpipe launch` starts them on one machine).

#include "commands.hpp"

#include <actorpipe/launch.hpp>

#include <memory>

namespace actorpipe::cli {

namespace {

struct WorkerArguments {
  WorkerOptions options;
  std::uint32_t connect_timeout = 60; ///< seconds
};

} // namespace

void add_tls_options(CLI::App& command, TlsFiles& tls) {
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
  command->add_option("--coordinator", args->options.coordinator,
                      "HOST:PORT where the coordinator listens (else MASTER_ADDR:MASTER_PORT from the environment)");
  command->add_option("--token-file", args->options.token_file,
                      "the job's token, in a file only its owner may read (else ACTORPIPE_TOKEN)");
  command
      ->add_option("--connect-timeout", args->connect_timeout,
                   "seconds to keep trying to reach the coordinator, which may start after its workers (default 60)")
      ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{3600}));
  command->add_option("--cpus", args->options.cpus,
                      "the cores this worker and its stages run on, as taskset -c lists them (0-3,8); its stage "
                      "threads are bound among them as `run` binds them (default: where it was started, unbound)");
  add_tls_options(*command, args->options.tls);
  command->callback([&run, args] {
    run = [args] {
      args->options.connect_timeout = std::chrono::seconds(args->connect_timeout);
      const Status done = run_worker(args->options);
      return done ? 0 : report(done.error());
    };
  });
}

} // namespace actorpipe::cli
