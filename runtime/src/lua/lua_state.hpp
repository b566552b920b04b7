#pragma once

/// A Lua 5.4 state for scripts and Lua jobs: sandboxed unless asked otherwise, stopped
/// by a deadline or a cancel flag, and with errors that carry FILE:LINE and the Lua
/// traceback. Internal: the public face is run_script() (actorpipe/script.hpp) and
/// load_job() of a .lua file.

#include <actorpipe/error.hpp>

#include <atomic>
#include <chrono>
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

  /// Calls the function below `nargs` arguments on the stack in protected mode, with
  /// the traceback handler, leaving `nresults` results.
  Status call(int nargs, int nresults);

  /// Whether the cancel flag is set or the deadline has passed: the hook stops Lua code
  /// then, and long C++ work the script started (a training run) asks this.
  bool stop_due() const;

private:
  /// (Re)installs the hook that stops the code once stop_due().
  void watch();

  lua_State* L_;
  StateOptions options_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  double limit_s_ = 0; ///< what the deadline stands for, for its message
};

/// The LuaState that owns `L` (each state keeps a pointer to its owner).
LuaState& owner(lua_State* L);

} // namespace actorpipe::lua
