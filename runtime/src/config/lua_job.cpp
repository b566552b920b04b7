/// Lua jobs: the table as TOML text, read by config::read_job, its places moved from the
/// TOML text's lines to the Lua source's.

#include "config/lua_job.hpp"

#include "lua/lua_values.hpp"
#include "config/source_keys.hpp"

#include "base/input_file.hpp"
#include "config/job_config.hpp"
#include "config/toml_reader.hpp"

#include <lua.hpp>

namespace actorpipe::lua {

// A Lua job table is written as TOML: no deeper than TOML is read.
static_assert(lua::max_lua_depth == config::max_toml_depth);

namespace {

/// Rewrites every "SOURCE:LINE:COL" of the TOML text in `text` as "SOURCE:LUALINE" (or
/// "SOURCE" where the Lua line is unknown).
std::string to_lua_lines(std::string text, const std::string& source, const std::vector<int>& lua_lines) {
  const std::string prefix = source + ":";
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    std::size_t i = at + prefix.size(), line = 0, digits = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits)
      line = line * 10 + static_cast<std::size_t>(text[i] - '0');
    if (!digits || i >= text.size() || text[i] != ':') continue;
    std::size_t end = i + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])))
      ++end;
    const int lua_line = line >= 1 && line <= lua_lines.size() ? lua_lines[line - 1] : 0;
    const std::string place = lua_line > 0 ? source + ":" + std::to_string(lua_line) : source;
    text.replace(at, end - at, place);
    at += place.size() - 1;
  }
  return text;
}

} // namespace

Result<JobSpec> job_from_table(lua_State* L, int index, const std::string& source, const std::string& source_text,
                               const std::vector<std::string>& overrides) {
  auto toml_text = to_toml(L, index);
  if (!toml_text) return std::move(toml_text).error().with_context(source + ": ");
  const SourceKeys keys = SourceKeys::scan(source_text);
  std::vector<int> lua_lines;
  for (const auto& path : toml_text->paths)
    lua_lines.push_back(source_text.empty() ? 0 : keys.line_of(path));
  auto place = [&](Error error) {
    error.message = to_lua_lines(std::move(error.message), source, lua_lines);
    return error;
  };
  auto root = config::parse_toml(toml_text->text, source);
  if (!root) return place(std::move(root).error());
  auto job = config::read_job(std::move(*root), source, overrides);
  if (!job) return place(std::move(job).error());
  for (auto& [key, origin] : job->origins)
    origin = to_lua_lines(origin, source, lua_lines);
  return job;
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
