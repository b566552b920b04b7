/// The parts of the module `actorpipe` that its functions share.

#include "script/script_module.hpp"

#include "base/input_file.hpp"
#include "base/output_folder.hpp"
#include "config/toml_reader.hpp"
#include "config/lua_job.hpp"
#include "lua/lua_values.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <sstream>

namespace actorpipe::lua {

namespace {

namespace fs = std::filesystem;

constexpr const char* context_key = "actorpipe.script";

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
    ACTORPIPE_TRY(owner(L).call(0, 1, L));
  } else {
    auto table = config::parse_toml_file(path);
    ACTORPIPE_TRY(table);
    std::ostringstream json;
    json << toml::json_formatter{*table};
    push_json(L, nlohmann::json::parse(json.str()));
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
    ACTORPIPE_TRY(owner(L).call(2, 1, L));
    lua_replace(L, 1);
  }
  lua_settop(L, 1);
  return Ok{};
}

} // namespace

ScriptContext& context(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, context_key);
  auto* c = static_cast<ScriptContext*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *c;
}

void set_context(lua_State* L, ScriptContext* c) {
  lua_pushlightuserdata(L, c);
  lua_setfield(L, LUA_REGISTRYINDEX, context_key);
}

void set_functions(lua_State* L, int module, std::initializer_list<luaL_Reg> functions) {
  module = lua_absindex(L, module);
  for (const luaL_Reg& f : functions) {
    lua_pushvalue(L, module);
    lua_pushcclosure(L, f.func, 1);
    lua_setfield(L, module, f.name);
  }
}

Status expect_type(lua_State* L, int index, int type, const char* what) {
  if (lua_type(L, index) == type) return Ok{};
  return Error::bad_input(std::string(what) + ": expected a " + lua_typename(L, type) + " and found a " +
                          luaL_typename(L, index));
}

Result<JobSpec> job_argument(lua_State* L) {
  ACTORPIPE_TRY(job_table_argument(L));
  // A table from a Lua job file is placed at that file's lines.
  const std::string source = job_source(L, 1);
  std::string text;
  if (source.ends_with(".lua"))
    if (auto read = read_file(source)) text = std::move(*read);
  return job_from_table(L, 1, source, text, {});
}

Result<PluginRegistry> plugins_for(lua_State* L, const JobSpec* job, std::vector<std::string>* searched) {
  // A native plugin runs its code when loaded: a sandboxed script, which may spell any
  // job, loads only those its command line and environment put on the search path.
  if (job && !job->plan.plugin_path.empty() && !context(L).options.allow_io)
    return Error::bad_input(job->where("plan.plugin_path") +
                            "a sandboxed script loads plugins only from the folders its command line (--plugin-path) "
                            "and environment (ACTORPIPE_PLUGIN_PATH) name; run it with --allow-io to load the job's");
  const std::vector<std::string> folders = PluginRegistry::search_path(
      job ? job->plan.plugin_path : std::vector<std::string>{}, context(L).options.plugin_path);
  if (searched) *searched = folders;
  auto registry = PluginRegistry::discover(folders);
  ACTORPIPE_TRY(registry);
  for (const LuaPlugin& plugin : context(L).registrations.plugins)
    ACTORPIPE_TRY(registry->add(plugin.record, plugin.create));
  return registry;
}

Result<std::string> output_file(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TSTRING) return Error::bad_input("expected a file name");
  return output_file(L, std::string(lua_tostring(L, index)));
}

Result<std::string> output_file(lua_State* L, const std::string& name) {
  const fs::path relative(name);
  bool escapes = relative.is_absolute() || relative.empty() || !relative.has_filename();
  for (const auto& part : relative)
    escapes = escapes || part == "..";
  if (escapes)
    return Error::bad_input("'" + name + "': a script writes only inside its output folder: give a relative name");
  auto folder = make_folder_inside(context(L).output_dir, relative.parent_path());
  ACTORPIPE_TRY(folder);
  return (fs::path(*folder) / relative.filename()).string();
}

Result<std::string> readable_file(lua_State* L, int index, const char* function, const char* in_folder) {
  ACTORPIPE_TRY(expect_type(L, index, LUA_TSTRING, (std::string(function) + ": the file").c_str()));
  const ScriptContext& c = context(L);
  const fs::path given = lua_tostring(L, index);
  const fs::path root = fs::absolute(c.output_dir).lexically_normal();
  fs::path path = fs::absolute(given).lexically_normal();
  // Links resolved on both sides: one planted inside the folder may point anywhere.
  if (!resolves_inside(root, path) && given.is_relative()) path = (root / given).lexically_normal();
  std::error_code ec;
  if (in_folder && fs::is_directory(path, ec)) path /= in_folder;
  if (!c.options.allow_io && !resolves_inside(root, path))
    return Error::bad_input(std::string(function) + ": '" + given.string() +
                            "': a sandboxed script reads files only inside its output folder " + c.output_dir +
                            " (run it with --allow-io to read others)");
  return path.string();
}

Result<std::string> output_folder(lua_State* L, const std::string& name) {
  auto checked = output_file(L, name);
  ACTORPIPE_TRY(checked);
  return make_folder_inside(context(L).output_dir, name);
}

Status check_keys(lua_State* L, int index, const char* function, std::initializer_list<const char*> known) {
  if (lua_isnoneornil(L, index)) return Ok{};
  ACTORPIPE_TRY(expect_type(L, index, LUA_TTABLE, (std::string(function) + ": options").c_str()));
  index = lua_absindex(L, index);
  lua_pushnil(L);
  while (lua_next(L, index)) {
    lua_pop(L, 1);
    const std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
    bool found = false;
    std::string list;
    for (const char* k : known) {
      found = found || key == k;
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    if (!found) {
      lua_pop(L, 1);
      return Error::bad_input(std::string(function) + ": unknown option '" + key + "' (" + list + ")");
    }
  }
  return Ok{};
}

void push_json_text(lua_State* L, const std::string& json) { push_json(L, nlohmann::json::parse(json)); }

} // namespace actorpipe::lua
