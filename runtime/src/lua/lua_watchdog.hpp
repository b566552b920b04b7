#pragma once

/// The watchdog: what stops Lua from outside its state. The hook in each state stops
/// Lua code at its limit, but no hook runs in a finaliser (`__gc`, at lua_close), and
/// none inside one long library call (string.find with a pathological pattern); an
/// error handler may run on too. Where the process asks for it (the CLI does; an
/// embedder's process is its own), Lua still running `grace` after its limit passed
/// or after a cancel ends the process: its message on standard error, exit 2 (130
/// for a cancel, as Ctrl-C ends any command).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace actorpipe::lua {

/// How long Lua may run on past its limit before the watchdog ends the process: the
/// hook stops ordinary code within a millisecond.
inline constexpr std::chrono::seconds overrun_grace{1};

/// Turns ending the process on overrun on or off (off until the CLI turns it on).
void end_process_on_overrun(bool on);

/// One state's limits as the watchdog reads them; the state writes them. Times are
/// steady_clock nanoseconds; 0: none.
struct WatchedLimits {
  std::atomic<std::int64_t> deadline{0};
  const std::atomic<bool>* cancel = nullptr;
  /// Whether Lua of this state runs now, and since when (a module function's C++
  /// work, which watches the limit itself, is not Lua).
  std::atomic<bool> running{false};
  std::atomic<std::int64_t> running_since{0};
};

/// While alive, the watchdog watches `limits`. Its message names `file` and, for a
/// deadline, `limit` ("script.lua: stopped after its --timeout of 2 s").
class Watched {
public:
  Watched(WatchedLimits& limits, std::string file, std::string limit);
  ~Watched();
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;
  /// A new description (the file being run, another call's limit).
  void describe(std::string file, std::string limit);

private:
  WatchedLimits& limits_;
};

/// steady_clock's now, in the units WatchedLimits keeps.
std::int64_t now_ns();

} // namespace actorpipe::lua
