#pragma once

/// A Lua 5.4 state for scripts and Lua jobs: sandboxed unless asked otherwise, stopped
/// by a deadline or a cancel flag (by its hook, and by the watchdog where no hook
/// runs), its memory bounded, and with errors that carry FILE:LINE and the Lua
/// traceback. Internal: the public face is run_script() (actorpipe/script.hpp) and
/// load_job() of a .lua file.

#include "lua/lua_watchdog.hpp"

#include <actorpipe/error.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct lua_State;

namespace actorpipe::lua {

struct StateOptions {
  /// Everything of the standard library (io, os, package, load of binary chunks);
  /// otherwise a script gets the safe parts and a clear error for the rest.
  bool allow_io = false;
  /// Stopped with an error once this many seconds have passed since the state was
  /// made; 0: no limit.
  double timeout_s = 0;
  /// Each run_file() and call() stopped with an error once this many seconds have passed
  /// since it began (a plugin's functions are called long after its state was made);
  /// 0: no limit.
  double call_timeout_s = 0;
  /// Stopped with an error once this is set (Ctrl-C).
  const std::atomic<bool>* cancel = nullptr;
  /// The most its Lua values may take, in MiB: past it the code is stopped with an
  /// error, and an allocation that would take twice as much is refused.
  std::size_t memory_limit_mib = 1024;
};

class LuaState {
public:
  explicit LuaState(const StateOptions& options = {});
  ~LuaState();
  LuaState(const LuaState&) = delete;
  LuaState& operator=(const LuaState&) = delete;

  lua_State* get() const { return L_; }

  /// Loads and runs `path` with `...` = `args`, leaving its first result on the stack
  /// (nil when it returns none). A syntax or runtime error comes back as bad input:
  /// "FILE:LINE: message" and the traceback.
  Status run_file(const std::string& path, const std::vector<std::string>& args = {});

  /// Calls the function below `nargs` arguments on the stack of `thread` (the state's
  /// main thread by default; a module function called from a coroutine passes that
  /// coroutine's) in protected mode, with the traceback handler, leaving `nresults`
  /// results.
  Status call(int nargs, int nresults, lua_State* thread = nullptr);

  /// Whether the cancel flag is set or the deadline has passed: the hook stops Lua code
  /// then, and long C++ work the script started (a training run) asks this.
  bool stop_due() const;

  /// While alive, what runs is not Lua but a module function's C++ work, which asks
  /// stop_due() itself: the watchdog leaves it be. Lua it calls back runs through
  /// call(), watched again.
  class Outside {
  public:
    explicit Outside(lua_State* L);
    ~Outside();
    Outside(const Outside&) = delete;
    Outside& operator=(const Outside&) = delete;

  private:
    WatchedLimits& limits_;
    bool was_running_;
  };

  /// The bytes its Lua values take now.
  std::size_t memory_used() const { return memory_.used; }

private:
  /// What the allocator counts: a limit no Lua code can lift.
  struct Memory {
    std::size_t used = 0;
    std::size_t limit = 0; ///< 0: none
  };
  /// Marks Lua as running (for the watchdog) while alive.
  class Running;

  static void* allocate(void* memory, void* block, std::size_t old_size, std::size_t new_size);
  /// (Re)installs the hook that stops the code once stop_due() or past its memory.
  void watch();
  /// The limit in force, as the watchdog's message gives it ("--timeout of 2 s").
  std::string limit_text() const;
  /// Tells the watchdog the file and the limit in force.
  void describe();

  Memory memory_; ///< before L_: the state's allocator counts into it until lua_close
  lua_State* L_;
  StateOptions options_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  double limit_s_ = 0; ///< what the deadline stands for, for its message
  std::string file_;   ///< the file run_file() ran, which the watchdog's message names
  WatchedLimits limits_;
  std::unique_ptr<Watched> watched_;
};

/// The LuaState that owns `L` (each state keeps a pointer to its owner).
LuaState& owner(lua_State* L);

} // namespace actorpipe::lua
