/// The usable cores, binding a thread to one, and intra-op threads per compute thread.

#include "train/cores.hpp"

#include <actorpipe/training.hpp>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

namespace actorpipe::train {

namespace {

cpu_set_t set_of(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores)
    CPU_SET(core, &set);
  return set;
}

std::vector<int> cores_in(const cpu_set_t& set) {
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

} // namespace

std::vector<int> usable_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  // The main thread's mask (its id is the process's), whichever thread asks: a stage
  // thread's own is its one bound core.
  if (sched_getaffinity(getpid(), sizeof set, &set) == 0) cores = cores_in(set);
  if (cores.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      cores.push_back(static_cast<int>(c));
  return cores;
}

int shared_core(const std::vector<int>& cores, std::size_t index, std::size_t actors) {
  return cores[std::min(cores.size() - 1, index * cores.size() / std::max<std::size_t>(1, actors))];
}

std::optional<int> stage_core(const std::vector<int>& cores, std::size_t index, std::size_t actors) {
  if (actors <= cores.size()) return std::nullopt;
  return shared_core(cores, index, actors);
}

namespace {

bool bind_thread_to_all(const std::vector<int>& cores) {
  const cpu_set_t set = set_of(cores);
  return !cores.empty() && pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

} // namespace

bool bind_thread_to(int core) { return bind_thread_to_all({core}); }

bool bind_process_to(const std::vector<int>& cores) {
  if (cores.empty()) return false;
  const cpu_set_t set = set_of(cores);
  // A thread inherits its creator's mask: those there now are bound one by one (by
  // their ids in /proc/self/task), and every thread they start is bound with them.
  bool bound = true;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const pid_t id = static_cast<pid_t>(std::stol(task.path().filename().string()));
    const bool done = ::sched_setaffinity(id, sizeof set, &set) == 0 || errno == ESRCH; // ESRCH: it ended meanwhile
    bound = done && bound;
  }
  return !error && bound;
}

CoreBinding::CoreBinding(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0) before_ = cores_in(set);
  bind_thread_to_all(cores);
}

CoreBinding::~CoreBinding() { bind_thread_to_all(before_); }

std::vector<int> cores_of(const std::vector<int>& cores, std::size_t first, std::size_t count) {
  std::vector<int> out;
  for (std::size_t k = 0; k < count; ++k)
    out.push_back(cores[(first + k) % cores.size()]);
  return out;
}

int compute_threads_for(std::size_t workers) {
  const std::size_t cores = usable_cores().size();
  return static_cast<int>(std::max<std::size_t>(1, cores / std::max<std::size_t>(1, workers)));
}

void use_compute_threads(int threads) {
  thread_local int current = 0;
  if (threads < 1 || threads == current) return;
  at::set_num_threads(threads);
  current = threads;
}

} // namespace actorpipe::train

std::size_t actorpipe::usable_core_count() { return train::usable_cores().size(); }
