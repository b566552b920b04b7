#pragma once

/// Values between Lua and the rest of actorpipe: JSON documents (what `--json` prints)
/// become plain Lua tables, and tables become JSON or TOML tables (a job table is read
/// by the same code as a job file).

#include <actorpipe/error.hpp>

#include <nlohmann/json_fwd.hpp>
#include <toml++/toml.h>

#include <cstddef>
#include <string>
#include <vector>

struct lua_State;

namespace actorpipe::lua {

/// The deepest Lua value turned into JSON or TOML (tables within tables): as deep as TOML
/// is read (config::max_toml_depth; config/lua_job.cpp checks they agree). Deeper, or a
/// table inside itself, is an error.
inline constexpr std::size_t max_lua_depth = 64;

/// Pushes `value`: objects become tables with string keys, arrays sequences from 1,
/// null nil.
void push_json(lua_State* L, const nlohmann::json& value);

/// The value at `index` as JSON: a table whose keys are 1…n is an array (an empty table
/// too), any other an object with its keys as strings. `where` names the value in
/// errors ("rows[3].loss"). Functions and other userdata, strings that are not UTF-8,
/// tables deeper than max_lua_depth or inside themselves are errors. Tables are read
/// raw: no metamethod runs.
Result<nlohmann::json> to_json(lua_State* L, int index, const std::string& where);

/// A table as a TOML table, read by the same code as a TOML file: a table whose keys
/// are 1…n is an array (an empty one too), any other a table with its keys as strings;
/// integers stay integers. Its nodes have no places: its reader places its keys (a Lua
/// job's, by SourceKeys). Read raw, no deeper than max_lua_depth, as to_json().
Result<toml::table> to_toml(lua_State* L, int index);

} // namespace actorpipe::lua
