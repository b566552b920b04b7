#include "lua_watchdog.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace actorpipe::lua {

namespace {

using Clock = std::chrono::steady_clock;

/// The states being watched and the one thread that watches them, made on first use
/// and never destroyed (a state may outlive static destruction's order).
struct Watchdog {
  std::mutex mutex;
  struct Names {
    std::string file, limit;
  };
  std::map<WatchedLimits*, Names> watched;
  std::map<WatchedLimits*, std::int64_t> cancel_seen; ///< when each cancel was first seen
  std::atomic<bool> enabled{false};
  bool thread_started = false;

  static Watchdog& get() {
    static auto* dog = new Watchdog();
    return *dog;
  }

  /// One write, then _exit: the process's other threads may hold any lock.
  [[noreturn]] static void end(const std::string& message, int status) {
    const std::string line = "actorpipe: " + message + "\n";
    (void)!::write(2, line.data(), line.size());
    ::_exit(status);
  }

  void look() {
    std::lock_guard lock(mutex);
    const std::int64_t now = now_ns();
    const std::int64_t grace = std::chrono::duration_cast<std::chrono::nanoseconds>(overrun_grace).count();
    for (auto& [limits, names] : watched) {
      std::int64_t due = 0;
      bool cancelled = false;
      if (limits->cancel && limits->cancel->load()) {
        cancelled = true;
        due = cancel_seen.emplace(limits, now).first->second;
      } else if (const std::int64_t deadline = limits->deadline.load(); deadline != 0 && now > deadline) {
        due = deadline;
      } else {
        continue;
      }
      if (!limits->running.load()) continue;
      if (now - std::max(due, limits->running_since.load()) < grace) continue;
      const std::string why = " (Lua ran on where no hook stops it: a finaliser, an error handler or one long "
                              "library call)";
      if (cancelled) end(names.file + ": interrupted" + why, 130);
      end(names.file + ": stopped after its " + names.limit + why, 2);
    }
  }

  void start_thread() {
    if (thread_started) return;
    thread_started = true;
    std::thread([this] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        look();
      }
    }).detach();
  }
};

} // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void end_process_on_overrun(bool on) { Watchdog::get().enabled = on; }

Watched::Watched(WatchedLimits& limits, std::string file, std::string limit) : limits_(limits) {
  Watchdog& dog = Watchdog::get();
  std::lock_guard lock(dog.mutex);
  dog.watched[&limits_] = {std::move(file), std::move(limit)};
  if (dog.enabled) dog.start_thread();
}

Watched::~Watched() {
  Watchdog& dog = Watchdog::get();
  std::lock_guard lock(dog.mutex);
  dog.watched.erase(&limits_);
  dog.cancel_seen.erase(&limits_);
}

void Watched::describe(std::string file, std::string limit) {
  Watchdog& dog = Watchdog::get();
  std::lock_guard lock(dog.mutex);
  dog.watched[&limits_] = {std::move(file), std::move(limit)};
}

} // namespace actorpipe::lua
