#include "local_launch.hpp"

#include "launch/job_token.hpp"

#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace actorpipe::cli {

Result<std::unique_ptr<LocalLaunch>> LocalLaunch::prepare(const LaunchArguments& arguments, const std::string& job_file,
                                                          std::vector<std::string> overrides) {
  auto listen = launch::parse_endpoint(arguments.listen, "--listen", true);
  if (!listen) return listen.error();
  std::unique_ptr<LocalLaunch> launch(new LocalLaunch());
  char folder[] = "/tmp/actorpipe-launch-XXXXXX"; // 0700: the token stays the owner's
  if (::mkdtemp(folder) == nullptr) return Error::run_failed("cannot make a folder for the job's token");
  launch->folder_ = folder;
  actors::CoordinateOptions& c = launch->coordinate_;
  c.workers = arguments.nprocs;
  c.token = launch::new_token();
  c.listen = *listen;
  c.job_file = job_file;
  c.overrides = std::move(overrides);
  c.restarts = arguments.restart;
  c.heartbeat_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(arguments.heartbeat_timeout * 1000.0));
  c.log = [](const std::string& line) { std::cerr << "actorpipe: " << line << "\n"; };
  const std::string token_file = launch->folder_ + "/token";
  if (auto written = launch::write_token_file(token_file, c.token); !written) return written.error();
  LocalLaunch* self = launch.get();
  c.on_listening = [self, token_file](const launch::Endpoint& gate) {
    const std::size_t n = self->coordinate_.workers;
    // A restart: the lost run's workers are gone, or told to go; one that hangs is stopped.
    if (self->starts_++ > 0) (void)self->workers_.wait(2);
    std::cerr << "actorpipe: listening on " << gate.text() << "; starting " << n << " worker" << (n == 1 ? "" : "s")
              << "\n";
    if (auto started = self->workers_.start(n, gate.text(), token_file); !started)
      std::cerr << "actorpipe: " << started.error().message << "\n";
  };
  return launch;
}

LocalLaunch::~LocalLaunch() {
  std::error_code ec;
  std::filesystem::remove_all(folder_, ec);
}

Status LocalLaunch::finish(bool run_succeeded) { return workers_.wait(run_succeeded ? 30 : 2); }

} // namespace actorpipe::cli
