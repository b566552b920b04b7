/// run_script() and the module `actorpipe` a script sees. Every function hands back the
/// same documents `--json` prints, as plain tables; an actorpipe error becomes a Lua
/// error with the CLI's message.

#include <actorpipe/script.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/report.hpp>
#include <actorpipe/simulator.hpp>

#include "base/atomic_file.hpp"
#include "base/input_file.hpp"
#include "config/toml_reader.hpp"
#include "lua/lua_job.hpp"
#include "lua/lua_state.hpp"
#include "lua/lua_values.hpp"

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

namespace actorpipe {

namespace {

namespace fs = std::filesystem;

/// What the module's functions share, kept in the registry.
struct ScriptContext {
  ScriptOptions options;
  std::string output_dir;
};

constexpr const char* context_key = "actorpipe.script";

ScriptContext& context(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, context_key);
  auto* c = static_cast<ScriptContext*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *c;
}

/// Lua errors unwind with longjmp, past C++ destructors: module functions return their
/// errors as values, and `entry` raises them once nothing of C++ is left in scope.
using ModuleFunction = Result<int> (*)(lua_State*);

template <ModuleFunction f> int entry(lua_State* L) {
  bool failed = false;
  {
    std::string message;
    try {
      auto result = f(L);
      if (result) return *result;
      message = std::move(result).error().message;
    } catch (const std::exception& e) {
      message = e.what();
    }
    luaL_where(L, 1); // the script's FILE:LINE
    lua_pushstring(L, message.c_str());
    lua_concat(L, 2);
    failed = true;
  }
  return failed ? lua_error(L) : 0;
}

/// Calls the function below `nargs` arguments in protected mode; its error as a value.
Status pcall(lua_State* L, int nargs, int nresults) {
  if (lua_pcall(L, nargs, nresults, 0) == LUA_OK) return Ok{};
  std::string message = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
  lua_pop(L, 1);
  return Error::bad_input(std::move(message));
}

Status expect_type(lua_State* L, int index, int type, const char* what) {
  if (lua_type(L, index) == type) return Ok{};
  return Error::bad_input(std::string(what) + ": expected a " + lua_typename(L, type) + " and found a " +
                          luaL_typename(L, index));
}

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

/// A job table's file: its metatable's `file` ("<script>" for one built in a script).
std::string job_source(lua_State* L, int index) {
  std::string source = "<script>";
  if (lua_getmetatable(L, index)) {
    if (lua_getfield(L, -1, "file") == LUA_TSTRING) source = lua_tostring(L, -1);
    lua_pop(L, 2);
  }
  return source;
}

/// Pushes the job at `path` as a table of its keys, with {file = path} as metatable.
Status push_job_file(lua_State* L, const std::string& path) {
  ACTORPIPE_TRY(load_job(path)); // every mistake reported as for the CLI, at its line
  if (path.ends_with(".lua")) {
    if (luaL_loadfilex(L, path.c_str(), "t") != LUA_OK) {
      std::string message = lua_tostring(L, -1);
      lua_pop(L, 1);
      return Error::bad_input(std::move(message));
    }
    ACTORPIPE_TRY(pcall(L, 0, 1));
  } else {
    auto table = config::parse_toml_file(path);
    ACTORPIPE_TRY(table);
    std::ostringstream json;
    json << toml::json_formatter{*table};
    lua::push_json(L, nlohmann::json::parse(json.str()));
  }
  lua_createtable(L, 0, 1);
  lua_pushstring(L, path.c_str());
  lua_setfield(L, -2, "file");
  lua_setmetatable(L, -2);
  return Ok{};
}

/// Replaces argument 1 (a job's path or table) by its table with argument 2's
/// overrides applied (actorpipe.with).
Status job_table_argument(lua_State* L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    ACTORPIPE_TRY(push_job_file(L, lua_tostring(L, 1)));
    lua_replace(L, 1);
  }
  ACTORPIPE_TRY(expect_type(L, 1, LUA_TTABLE, "job"));
  if (!lua_isnoneornil(L, 2)) {
    ACTORPIPE_TRY(expect_type(L, 2, LUA_TTABLE, "overrides"));
    lua_getfield(L, lua_upvalueindex(1), "with");
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    ACTORPIPE_TRY(pcall(L, 2, 1));
    lua_replace(L, 1);
  }
  lua_settop(L, 1);
  return Ok{};
}

/// The job in argument 1 (a path or a table) with argument 2's overrides, read.
Result<JobSpec> job_argument(lua_State* L) {
  ACTORPIPE_TRY(job_table_argument(L));
  // A table from a Lua job file is placed at that file's lines.
  const std::string source = job_source(L, 1);
  std::string text;
  if (source.ends_with(".lua"))
    if (auto read = read_file(source)) text = std::move(*read);
  return lua::job_from_table(L, 1, source, text, {});
}

Result<PluginRegistry> plugins_for(lua_State* L, const JobSpec* job, std::vector<std::string>* searched = nullptr) {
  std::vector<std::string> folders = PluginRegistry::default_folders();
  if (job) folders.insert(folders.end(), job->plan.plugin_path.begin(), job->plan.plugin_path.end());
  const auto& extra = context(L).options.plugin_path;
  folders.insert(folders.end(), extra.begin(), extra.end());
  if (searched) *searched = folders;
  return PluginRegistry::discover(folders);
}

void push_json_text(lua_State* L, const std::string& json) { lua::push_json(L, nlohmann::json::parse(json)); }

/// load_job(path_or_table [, overrides]): the job's table, checked.
Result<int> load_job_fn(lua_State* L) {
  ACTORPIPE_TRY(job_argument(L)); // checked now, not at its first use
  return 1;
}

/// plan(job [, overrides]): what `actorpipe plan --json` prints.
Result<int> plan_fn(lua_State* L) {
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  auto plugins = plugins_for(L, &*job);
  ACTORPIPE_TRY(plugins);
  auto plan = make_plan(*job, *plugins);
  ACTORPIPE_TRY(plan);
  push_json_text(L, plan_to_json(*plan, job->profile, job->cluster));
  return 1;
}

/// simulate(job [, overrides]): what `actorpipe simulate --json` prints.
Result<int> simulate_fn(lua_State* L) {
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  auto options = simulation_options(*job);
  if (!options) return std::move(options).error().with_context(job->where("simulate.stragglers"));
  auto plugins = plugins_for(L, &*job);
  ACTORPIPE_TRY(plugins);
  auto plan = make_plan(*job, *plugins);
  ACTORPIPE_TRY(plan);
  auto report = simulate(*plan, job->profile, job->cluster, *options);
  ACTORPIPE_TRY(report);
  push_json_text(L, simulation_to_json(*report, *plan, job->cluster));
  return 1;
}

/// plugins(): what `actorpipe plugins --json` prints.
Result<int> plugins_fn(lua_State* L) {
  std::vector<std::string> folders;
  auto plugins = plugins_for(L, nullptr, &folders);
  ACTORPIPE_TRY(plugins);
  push_json_text(L, plugins_to_json(*plugins, folders));
  return 1;
}

/// A file named by a script: relative, inside the output folder, created with it.
Result<std::string> output_file(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TSTRING) return Error::bad_input("expected a file name");
  const std::string name = lua_tostring(L, index);
  const fs::path relative(name);
  bool escapes = relative.is_absolute() || relative.empty();
  for (const auto& part : relative)
    escapes = escapes || part == "..";
  if (escapes)
    return Error::bad_input("'" + name + "': a script writes only inside its output folder: give a relative name");
  const fs::path path = fs::path(context(L).output_dir) / relative;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Error::run_failed(path.parent_path().string() + ": cannot create the folder: " + ec.message());
  return path.string();
}

/// write_json(name, value): the file's path.
Result<int> write_json_fn(lua_State* L) {
  auto path = output_file(L, 1);
  ACTORPIPE_TRY(path);
  auto value = lua::to_json(L, 2, "value");
  ACTORPIPE_TRY(value);
  ACTORPIPE_TRY(write_file_atomically(*path, value->dump(2) + "\n"));
  lua_pushstring(L, path->c_str());
  return 1;
}

std::string csv_cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

/// write_csv(name, rows [, columns]): rows are tables of column → value; the columns
/// are given, or every key of the rows, sorted. The file's path.
Result<int> write_csv_fn(lua_State* L) {
  auto path = output_file(L, 1);
  ACTORPIPE_TRY(path);
  auto rows = lua::to_json(L, 2, "rows");
  ACTORPIPE_TRY(rows);
  if (!rows->is_array()) return Error::bad_input("write_csv: rows must be a list of tables");
  std::vector<std::string> columns;
  if (!lua_isnoneornil(L, 3)) {
    auto given = lua::to_json(L, 3, "columns");
    ACTORPIPE_TRY(given);
    for (const auto& c : *given)
      columns.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  } else {
    std::set<std::string> keys;
    for (const auto& row : *rows)
      if (row.is_object())
        for (const auto& [key, unused] : row.items())
          keys.insert(key);
    columns.assign(keys.begin(), keys.end());
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c)
    out += (c ? "," : "") + csv_cell(columns[c]);
  out += "\n";
  std::size_t i = 0;
  for (const auto& row : *rows) {
    ++i;
    if (!row.is_object())
      return Error::bad_input("write_csv: rows[" + std::to_string(i) + "] is not a table of column = value");
    for (std::size_t c = 0; c < columns.size(); ++c)
      out += (c ? "," : "") + (row.contains(columns[c]) ? csv_cell(row[columns[c]]) : std::string());
    out += "\n";
  }
  ACTORPIPE_TRY(write_file_atomically(*path, out));
  lua_pushstring(L, path->c_str());
  return 1;
}

void open_module(lua_State* L, const ScriptContext& c) {
  lua_newtable(L);
  const int module = lua_gettop(L);
  const luaL_Reg functions[] = {{"load_job", entry<load_job_fn>},     {"plan", entry<plan_fn>},
                                {"simulate", entry<simulate_fn>},     {"plugins", entry<plugins_fn>},
                                {"write_json", entry<write_json_fn>}, {"write_csv", entry<write_csv_fn>}};
  for (const luaL_Reg& f : functions) {
    lua_pushvalue(L, module);
    lua_pushcclosure(L, f.func, 1);
    lua_setfield(L, module, f.name);
  }
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
  ScriptContext c{options, options.output_dir};
  if (c.output_dir.empty()) c.output_dir = (fs::path("runs") / fs::path(path).stem()).string();
  lua::StateOptions state_options;
  state_options.allow_io = options.allow_io;
  state_options.cancel = options.cancel;
  state_options.timeout_s = options.timeout_s;
  lua::LuaState state(state_options);
  lua_State* L = state.get();
  lua_pushlightuserdata(L, &c);
  lua_setfield(L, LUA_REGISTRYINDEX, context_key);
  open_module(L, c);
  return state.run_file(path, options.args);
}

} // namespace actorpipe
