#pragma once

/// Paths and helpers shared by the test suites: where the source and build trees are,
/// scratch folders, running the `actorpipe` binary, and checks on Results.

#include <actorpipe/plugin_registry.hpp>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>
#include <string_view>

/// Requires `result`, a Result or Status (evaluated once), to hold a value; else the
/// test case fails with the error's message.
#define REQUIRE_OK(result)                                                                                             \
  do {                                                                                                                 \
    const auto& require_ok_ = (result);                                                                                \
    BOOST_REQUIRE_MESSAGE(require_ok_.ok(), (require_ok_.ok() ? std::string() : require_ok_.error().message));         \
  } while (false)

namespace actorpipe::test {

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

/// The plugins of the default search path (the build tree's), discovered once.
const PluginRegistry& plugins();

std::filesystem::path source_root();
std::filesystem::path build_root();
/// Where the deliberately broken plugin modules are built.
std::filesystem::path broken_plugins();

/// Spearman's rank correlation of two equally long series (ties take their mean rank).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// A job's [cluster] table: one server "local" of `devices` CPU "devices" of `memory`
/// each (a size, "4 GiB"), for the suites that train on this machine.
std::string cpu_cluster_toml(std::size_t devices, const std::string& memory);

/// A fresh empty folder, removed when the object goes.
class ScratchDir {
public:
  ScratchDir();
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  /// Writes `content` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& content) const;

private:
  std::filesystem::path path_;
};

struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `actorpipe ARGS` (ARGS is passed to the shell as written) and captures both streams.
CommandResult run_cli(const std::string& args);
/// Runs a shell command line as written and captures both streams.
CommandResult run_command(const std::string& command_line);

/// `actorpipe` running, its standard error read line by line as it writes it: for tests
/// that act when a command has reached a point it reports (a signal mid-run), with no
/// waiting by the clock. Killed, if still running, when it goes.
class RunningCli {
public:
  explicit RunningCli(const std::vector<std::string>& args);
  ~RunningCli();
  RunningCli(const RunningCli&) = delete;
  RunningCli& operator=(const RunningCli&) = delete;

  /// Reads its standard error until a line containing `part`; false when it ended first.
  /// Every line read is kept in `err`.
  bool wait_for_line(const std::string& part);
  /// Sends it `signal`.
  void signal(int signal) const;
  /// Waits for it to end: its exit status, or 128 + the signal that ended it (as a shell
  /// reports it). Reads the rest of its standard error into `err`.
  int wait();
  std::string err;

private:
  int pid_ = -1;
  int err_fd_ = -1;
  std::string pending_;
  bool read_more();
};

} // namespace actorpipe::test
