#include "processes/local_workers.hpp"

#include "launch/core_list.hpp"
#include "launch/job_token.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <spawn.h>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace actorpipe::actors {

namespace {

/// Kills a worker and reaps it.
void kill_now(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

/// Whether worker `pid` has ended (reaped, its status in `status`). One that is stopped
/// (SIGSTOP: hung) is killed now, as it would never end by itself and takes no other
/// signal; it counts as ended well (status 0): its run reported it lost already.
bool ended(pid_t pid, int& status) {
  const pid_t done = ::waitpid(pid, &status, WNOHANG | WUNTRACED);
  if (done != pid) return false;
  if (WIFSTOPPED(status)) {
    kill_now(pid);
    status = 0;
  }
  return true;
}

/// Stops the workers that are still there: all are asked (SIGTERM) at once, and those
/// still there a second later are killed.
void stop(const std::vector<pid_t>& pids) {
  std::vector<pid_t> left;
  for (const pid_t pid : pids)
    if (::kill(pid, SIGTERM) == 0) left.push_back(pid);
  int status = 0;
  for (int i = 0; i < 50 && !left.empty(); ++i) {
    std::erase_if(left, [&](pid_t pid) { return ended(pid, status); });
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const pid_t pid : left)
    kill_now(pid);
}

} // namespace

LocalWorkers::~LocalWorkers() { stop(pids_); }

Status LocalWorkers::start(const std::string& program, std::size_t count, const std::string& coordinator,
                           const std::string& token, const std::vector<std::string>& flags,
                           const std::vector<std::vector<int>>& cores) {
  // This process's environment, its own token (if any) replaced by the job's.
  const std::string variable = std::string(launch::token_variable) + "=";
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry)
    if (std::strncmp(*entry, variable.c_str(), variable.size()) != 0) environment.emplace_back(*entry);
  environment.push_back(variable + token);
  std::vector<char*> envp;
  for (auto& entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<std::string> words{program, "worker", "--coordinator", coordinator};
    words.insert(words.end(), flags.begin(), flags.end());
    if (i < cores.size() && !cores[i].empty()) words.insert(words.end(), {"--cpus", launch::core_list_text(cores[i])});
    std::vector<char*> argv;
    for (auto& word : words)
      argv.push_back(word.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int error = ::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()); error != 0)
      return Error::run_failed("cannot start worker " + std::to_string(i + 1) + ": " + std::strerror(error));
    pids_.push_back(pid);
  }
  return Ok{};
}

Status LocalWorkers::wait(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string failed;
  std::vector<pid_t> left;
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    bool done = false;
    while (!(done = ended(pids_[i], status)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!done) {
      left.push_back(pids_[i]);
      continue;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed += (failed.empty() ? "" : ", ") + std::string("worker ") + std::to_string(i + 1);
  }
  stop(left);
  pids_.clear();
  if (!failed.empty()) return Error::run_failed(failed + " failed (its messages are above)");
  return Ok{};
}

} // namespace actorpipe::actors
