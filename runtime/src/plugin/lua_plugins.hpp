#pragma once

/// Plugins written in Lua: functions that a script, or a `.lua` file on the plugin path,
/// registers with actorpipe.register_partitioner(name, fn [, info]) (and
/// register_mapper, register_scheduler, register_sync, register_dataset). Each becomes
/// an object of the C++ interface, so the planner asks it and checks its answer as it
/// does a module's.

#include "lua/lua_state.hpp"

#include <actorpipe/plugin_registry.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct lua_State;

namespace actorpipe::lua {

/// The Lua state a plugin's function lives in, shared by every object made from it.
/// Calls into it are serialised: a sync policy may be asked from several stage threads.
class PluginHost {
public:
  /// A script's state, which the script owns: calls fail once close() is called.
  explicit PluginHost(lua_State* borrowed) : L_(borrowed) {}
  /// A plugin file's own state.
  explicit PluginHost(std::unique_ptr<LuaState> owned) : owned_(std::move(owned)), L_(owned_->get()) {}

  lua_State* state() const { return open_ ? L_ : nullptr; }
  std::recursive_mutex& mutex() { return mutex_; }
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
  }

private:
  std::unique_ptr<LuaState> owned_;
  lua_State* L_;
  std::recursive_mutex mutex_;
  bool open_ = true;
};

/// A registered plugin: its record and how to make an instance.
struct LuaPlugin {
  PluginRecord record;
  std::function<Result<std::shared_ptr<Plugin>>()> create;
};

/// Where the register_* functions of one state put what they register.
struct Registrations {
  std::shared_ptr<PluginHost> host;
  std::vector<LuaPlugin> plugins;
};

/// Sets register_partitioner, register_mapper, register_scheduler, register_sync and
/// register_dataset in the table at `module`; they append to `sink`, which outlives
/// the state's use.
void add_register_functions(lua_State* L, int module, Registrations* sink);

/// How long a plugin file's code may run at a time: loading it, and each call of the
/// functions it registered (a plan waits for them). As a Lua job's limit.
inline constexpr double plugin_time_limit_s = 10;

/// Runs the plugin file `path` in a state of its own (sandboxed) and returns what it
/// registered; a file that registers nothing is an error. Its loading and each later call
/// of its functions stop with an error after `time_limit_s`.
Result<std::vector<LuaPlugin>> load_plugin_file(const std::string& path, double time_limit_s = plugin_time_limit_s);

} // namespace actorpipe::lua
