/// Lua jobs: the table as a TOML table, read by config::read_job, each key placed at the
/// line of the Lua source that wrote it.

#include "config/lua_job.hpp"

#include "lua/lua_values.hpp"
#include "config/source_keys.hpp"

#include "base/input_file.hpp"
#include "base/text.hpp"
#include "config/job_config.hpp"
#include "config/toml_reader.hpp"

#include <lua.hpp>

namespace actorpipe::lua {

// A Lua job table is read as TOML is: no deeper than TOML is read.
static_assert(lua::max_lua_depth == config::max_toml_depth);

namespace {

/// A key path's parts without their array indices: "cluster.servers[1].nic" →
/// cluster, servers, nic (SourceKeys follows names, and places an element at its array).
std::vector<std::string> key_names(const std::string& key_path) {
  std::vector<std::string> names = text::split(key_path, '.');
  for (std::string& name : names)
    name = name.substr(0, name.find('['));
  return names;
}

} // namespace

Result<JobSpec> job_from_table(lua_State* L, int index, const std::string& source, const std::string& source_text,
                               const std::vector<std::string>& overrides) {
  auto root = to_toml(L, index);
  if (!root) return std::move(root).error().with_context(source + ": ");
  const SourceKeys keys = SourceKeys::scan(source_text);
  const config::KeyPlaces places = [&](const std::string& key_path) {
    const int line = source_text.empty() ? 0 : keys.line_of(key_names(key_path));
    return SourcePlace{source, static_cast<std::uint32_t>(std::max(line, 0))};
  };
  return config::read_job(std::move(*root), source, overrides, places);
}

Result<JobSpec> load_job_file(const std::string& path, const std::vector<std::string>& overrides, double timeout_s) {
  auto text = read_file(path);
  ACTORPIPE_TRY(text);
  StateOptions options;
  options.timeout_s = timeout_s;
  LuaState state(options);
  ACTORPIPE_TRY(state.run_file(path));
  lua_State* L = state.get();
  if (lua_type(L, -1) != LUA_TTABLE)
    return Error::bad_input(path + ": a Lua job must return a table of the job's keys, and it returned a " +
                            luaL_typename(L, -1));
  return job_from_table(L, -1, path, *text, overrides);
}

} // namespace actorpipe::lua
