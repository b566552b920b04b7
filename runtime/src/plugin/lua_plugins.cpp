/// The register_* functions and the C++ objects that call a registered Lua function.

#include "plugin/lua_plugins.hpp"

#include "plugin/lua_data_arrays.hpp"
#include "plugin/plugin_values.hpp"

#include <lua.hpp>

#include <cstring>

namespace actorpipe::lua {

namespace {

/// Where the register functions of a state find their Registrations: cleared once a
/// plugin file has run, so that a function registering later gets an error.
constexpr const char* sink_key = "actorpipe.registrations";

/// A registered function: the state it lives in, its reference there, and where it was
/// defined ("FILE:LINE": the plugin's `file`, which messages about it name).
struct Function {
  std::shared_ptr<PluginHost> host;
  int ref = LUA_NOREF;
  std::string origin;

  /// Calls it with what `push` pushes (returning how many values) and reads its one
  /// result with `read`.
  template <class T, class Push, class Read> Result<T> call(Push push, Read read) const {
    std::lock_guard lock(host->mutex());
    lua_State* L = host->state();
    if (!L) return Error::run_failed("the script that registered the function at " + origin + " has ended");
    const int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    const int nargs = push(L);
    if (auto status = owner(L).call(nargs, 1); !status) {
      lua_settop(L, top);
      return Error::bad_input(std::move(status).error().message);
    }
    Result<T> result = read(L, -1);
    lua_settop(L, top);
    if (!result) return Error::bad_input("returned " + result.error().message);
    return result;
  }
  /// Calls it with the one value `push` pushes, as most plugin kinds are called.
  template <class T, class Arg, class Read>
  Result<T> call(void (*push)(lua_State*, const Arg&), const Arg& arg, Read read) const {
    return call<T>(
        [&](lua_State* L) {
          push(L, arg);
          return 1;
        },
        read);
  }
};

class LuaPartitioner final : public Partitioner {
public:
  explicit LuaPartitioner(Function f) : f_(std::move(f)) {}
  Result<Partition> partition(const PlanContext& context) override {
    return f_.call<Partition>(push_plan_context, context, read_partition);
  }

private:
  Function f_;
};

class LuaMapper final : public Mapper {
public:
  explicit LuaMapper(Function f) : f_(std::move(f)) {}
  Result<Mapping> map(const PlanContext& context, const Partition& partition) override {
    return f_.call<Mapping>(
        [&](lua_State* L) {
          push_plan_context(L, context);
          push_partition(L, partition);
          return 2;
        },
        read_mapping);
  }

private:
  Function f_;
};

class LuaScheduler final : public Scheduler {
public:
  explicit LuaScheduler(Function f) : f_(std::move(f)) {}
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    return f_.call<Schedule>(push_schedule_request, request,
                             [](lua_State* L, int index) { return read_schedule(L, index, "its schedule"); });
  }

private:
  Function f_;
};

class LuaSyncPolicy final : public SyncPolicy {
public:
  explicit LuaSyncPolicy(Function f) : f_(std::move(f)) {}
  Result<SyncRound> round(const SyncRequest& request) override {
    return f_.call<SyncRound>(push_sync_request, request, read_sync_round);
  }

private:
  Function f_;
};

class LuaDataSource final : public DataSource {
public:
  explicit LuaDataSource(Function f) : f_(std::move(f)) {}
  Result<DataSplits> load(const DataRequest& request) override {
    return f_.call<DataSplits>(push_data_request, request, read_data_splits);
  }

private:
  Function f_;
};

std::shared_ptr<Plugin> make(PluginKind kind, Function f) {
  switch (kind) {
  case PluginKind::partitioner: return std::make_shared<LuaPartitioner>(std::move(f));
  case PluginKind::mapper: return std::make_shared<LuaMapper>(std::move(f));
  case PluginKind::scheduler: return std::make_shared<LuaScheduler>(std::move(f));
  case PluginKind::sync: return std::make_shared<LuaSyncPolicy>(std::move(f));
  case PluginKind::dataset: return std::make_shared<LuaDataSource>(std::move(f));
  }
  return nullptr;
}

/// register_KIND(name, fn [, {version = ..., description = ...}]). Lua errors unwind
/// past C++ destructors: every check raises before a C++ object is made.
template <PluginKind kind> int register_function(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, sink_key);
  auto* sink = static_cast<Registrations*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (!sink) return luaL_error(L, "a plugin file registers its plugins when it is loaded, not later");
  const char* name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  const char* version = "0";
  const char* description = "written in Lua";
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_settop(L, 3);
    if (lua_getfield(L, 3, "version") != LUA_TNIL) version = luaL_checkstring(L, 4);
    if (lua_getfield(L, 3, "description") != LUA_TNIL) description = luaL_checkstring(L, 5);
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      lua_pop(L, 1);
      const char* key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      if (std::strcmp(key, "version") != 0 && std::strcmp(key, "description") != 0)
        return luaL_error(L, "register_%s: unknown field '%s' in its info (version, description)", to_string(kind),
                          key);
    }
  }
  if (*name == '\0') return luaL_error(L, "register_%s: the name is empty", to_string(kind));
  for (const LuaPlugin& p : sink->plugins)
    if (p.record.kind == kind && p.record.name == name)
      return luaL_error(L, "register_%s: a %s named '%s' is registered already (%s)", to_string(kind), to_string(kind),
                        name, p.record.file.c_str());
  lua_Debug where{};
  lua_pushvalue(L, 2);
  lua_getinfo(L, ">S", &where);
  lua_pushvalue(L, 2);
  const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  {
    const std::string file = where.source && where.source[0] == '@' ? where.source + 1 : where.short_src;
    Function f{sink->host, ref, file + ":" + std::to_string(where.linedefined)};
    sink->plugins.push_back({PluginRecord{kind, name, version, description, f.origin},
                             [f]() -> Result<std::shared_ptr<Plugin>> { return make(kind, f); }});
  }
  return 0;
}

} // namespace

void add_register_functions(lua_State* L, int module, Registrations* sink) {
  module = lua_absindex(L, module);
  lua_pushlightuserdata(L, sink);
  lua_setfield(L, LUA_REGISTRYINDEX, sink_key);
  const luaL_Reg functions[] = {{"register_partitioner", register_function<PluginKind::partitioner>},
                                {"register_mapper", register_function<PluginKind::mapper>},
                                {"register_scheduler", register_function<PluginKind::scheduler>},
                                {"register_sync", register_function<PluginKind::sync>},
                                {"register_dataset", register_function<PluginKind::dataset>}};
  for (const luaL_Reg& f : functions) {
    lua_pushcfunction(L, f.func);
    lua_setfield(L, module, f.name);
  }
}

Result<std::vector<LuaPlugin>> load_plugin_file(const std::string& path, double time_limit_s) {
  StateOptions options;
  options.call_timeout_s = time_limit_s;
  auto host = std::make_shared<PluginHost>(std::make_unique<LuaState>(options));
  lua_State* L = host->state();
  Registrations sink{host, {}};
  lua_newtable(L);
  add_register_functions(L, -1, &sink);
  lua_setglobal(L, "actorpipe");
  const Status status = owner(L).run_file(path);
  lua_settop(L, 0);
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, sink_key);
  if (!status) return Error::bad_input(path + ": the plugin file failed: " + status.error().message);
  if (sink.plugins.empty())
    return Error::bad_input(path + ": a plugin file registers at least one plugin (actorpipe.register_partitioner, "
                                   "register_mapper, register_scheduler or register_sync)");
  return std::move(sink.plugins);
}

} // namespace actorpipe::lua
