#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace actorpipe::test {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) throw std::runtime_error(std::string(name) + " is not set; run the tests with `meson test`");
  return value;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

const PluginRegistry& plugins() {
  static PluginRegistry instance = [] {
    auto r = PluginRegistry::discover(PluginRegistry::default_folders());
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
  }();
  return instance;
}

fs::path source_root() { return env("ACTORPIPE_SOURCE_ROOT"); }
fs::path build_root() { return env("ACTORPIPE_BUILD_ROOT"); }
fs::path broken_plugins() { return env("ACTORPIPE_BROKEN_PLUGINS"); }

ScratchDir::ScratchDir() {
  std::random_device device;
  path_ = fs::temp_directory_path() / ("actorpipe-test-" + std::to_string(device()) + std::to_string(device()));
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const std::string& content) const {
  const fs::path file = path_ / name;
  fs::create_directories(file.parent_path());
  std::ofstream(file) << content;
  return file.string();
}

CommandResult run_cli(const std::string& args) { return run_command("'" + env("ACTORPIPE_CLI") + "' " + args); }

CommandResult run_command(const std::string& command_line) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "out", err = scratch.path() / "err";
  const std::string command = command_line + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int raw = std::system(command.c_str());
  CommandResult result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  return result;
}

RunningCli::RunningCli(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const std::string cli = env("ACTORPIPE_CLI");
  std::vector<std::string> argv_text{cli};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const int failed = ::posix_spawn(&pid_, cli.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  err_fd_ = pipe_fds[0];
  if (failed != 0) throw std::runtime_error("cannot start " + cli + ": " + std::strerror(failed));
}

RunningCli::~RunningCli() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool RunningCli::read_more() {
  char buffer[4096];
  const ssize_t n = ::read(err_fd_, buffer, sizeof buffer);
  if (n <= 0) return false;
  pending_.append(buffer, static_cast<std::size_t>(n));
  return true;
}

bool RunningCli::wait_for_line(const std::string& part) {
  for (;;) {
    // Progress on a terminal rewrites its line with '\r'; in a pipe, each ends in '\n'.
    for (std::size_t end; (end = pending_.find('\n')) != std::string::npos;) {
      const std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      err += line + "\n";
      if (line.find(part) != std::string::npos) return true;
    }
    if (!read_more()) return false;
  }
}

void RunningCli::signal(int signal) const { ::kill(pid_, signal); }

int RunningCli::wait() {
  while (read_more()) {
  }
  err += pending_;
  pending_.clear();
  int raw = 0;
  ::waitpid(pid_, &raw, 0);
  pid_ = -1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
}

namespace {

/// Ranks with ties averaged, for Spearman's coefficient.
std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
      ++j;
    for (std::size_t k = i; k <= j; ++k)
      out[order[k]] = 0.5 * static_cast<double>(i + j);
    i = j + 1;
  }
  return out;
}

} // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> x = ranks(a), y = ranks(b);
  const double mean = (static_cast<double>(x.size()) - 1) / 2;
  double xy = 0, xx = 0, yy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xy += (x[i] - mean) * (y[i] - mean);
    xx += (x[i] - mean) * (x[i] - mean);
    yy += (y[i] - mean) * (y[i] - mean);
  }
  return xy / std::sqrt(xx * yy);
}

std::string cpu_cluster_toml(std::size_t devices, const std::string& memory) {
  const std::string n = std::to_string(devices);
  return "[cluster]\nname = \"cpu-" + n + "\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n" +
         "[[cluster.servers]]\nname = \"local\"\n" + "pcie = { devices_per_switch = " + n +
         ", switch_bandwidth = \"10 GB/s\", inter_bridge_bandwidth = \"10 GB/s\" }\n" +
         "nic = { count = 1, bandwidth = \"10 GB/s\" }\n" + "devices = [{ kind = \"cpu\", count = " + n +
         ", speed = 1.0, memory = \"" + memory + "\" }]\n";
}

} // namespace actorpipe::test
