/// run_script(): a sandboxed state with the module `actorpipe` (script_module.hpp), and
/// the module's functions written in Lua.

#include <actorpipe/script.hpp>

#include "base/input_file.hpp"
#include "lua/lua_state.hpp"
#include "script/script_module.hpp"

#include <cstring>
#include <filesystem>

namespace actorpipe {

namespace {

namespace fs = std::filesystem;

/// Module functions written in Lua: copying a job table with overrides applied.
constexpr const char* prelude = R"lua(
local actorpipe = ...
-- A deep copy of a job table, with `overrides` set in it: {["plan.stages"] = 4} or
-- {plan = {stages = 4}}; its metatable (the file it came from) goes with it.
function actorpipe.with(job, overrides)
  local function copy(t)
    if type(t) ~= "table" then return t end
    local out = {}
    for k, v in pairs(t) do out[k] = copy(v) end
    return out
  end
  local out = setmetatable(copy(job), getmetatable(job))
  local function set(target, key, value)
    local head, rest = key:match("^([^.]+)%.(.+)$")
    if not head then
      if type(value) == "table" and type(target[key]) == "table" and next(value) ~= nil and value[1] == nil then
        for k, v in pairs(value) do set(target[key], k, v) end
      else
        target[key] = copy(value)
      end
      return
    end
    if type(target[head]) ~= "table" then target[head] = {} end
    set(target[head], rest, value)
  end
  for k, v in pairs(overrides or {}) do set(out, k, v) end
  return out
end
)lua";

void open_module(lua_State* L, lua::ScriptContext& c) {
  lua_newtable(L);
  const int module = lua_gettop(L);
  lua::add_planning_functions(L, module);
  lua::add_file_functions(L, module);
  lua::add_training_functions(L, module);
  lua::add_plot_functions(L, module);
  lua::add_register_functions(L, module, &c.registrations);
  lua_pushstring(L, c.output_dir.c_str());
  lua_setfield(L, module, "output_dir");
  lua_createtable(L, static_cast<int>(c.options.args.size()), 0);
  for (std::size_t i = 0; i < c.options.args.size(); ++i) {
    lua_pushstring(L, c.options.args[i].c_str());
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, module, "args");
  luaL_loadbuffer(L, prelude, std::strlen(prelude), "=actorpipe");
  lua_pushvalue(L, module);
  lua_call(L, 1, 0); // the module's own code: an error here is a bug, raised as one
  lua_setglobal(L, "actorpipe");
}

} // namespace

Status run_script(const std::string& path, const ScriptOptions& options) {
  ACTORPIPE_TRY(check_input_file(path));
  lua::ScriptContext c{options, options.output_dir, {}, {}, {}};
  if (c.output_dir.empty()) c.output_dir = (fs::path("runs") / fs::path(path).stem()).string();
  lua::StateOptions state_options;
  state_options.allow_io = options.allow_io;
  state_options.cancel = options.cancel;
  state_options.timeout_s = options.timeout_s;
  state_options.memory_limit_mib = options.memory_limit_mib;
  lua::LuaState state(state_options);
  lua_State* L = state.get();
  lua::set_context(L, &c);
  c.registrations.host = std::make_shared<lua::PluginHost>(L);
  open_module(L, c);
  Status status = state.run_file(path, options.args);
  c.registrations.host->close(); // a plugin object kept past the script fails, named
  return status;
}

} // namespace actorpipe
