/// Lua tables to and from JSON, and to TOML tables.

#include "lua_values.hpp"

#include "base/text.hpp"

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

namespace actorpipe::lua {

namespace {

/// The tables a walk over a Lua value is inside, the one guard of every walk here: it
/// bounds the depth (C++'s stack and Lua's), refuses a table that contains itself, and
/// makes room on Lua's stack for the next level. The walks read tables raw, so that no
/// metamethod (__index, __len, __pairs) runs where an error in it would jump past C++.
class Descent {
public:
  /// Entering the table at `index`; an error names `where`.
  Status enter(lua_State* L, int index, const std::string& where) {
    const void* table = lua_topointer(L, index);
    if (std::find(path_.begin(), path_.end(), table) != path_.end())
      return Error::bad_input(where + ": a table that contains itself cannot be written");
    if (path_.size() >= max_lua_depth)
      return Error::bad_input(where + ": tables nested deeper than " + std::to_string(max_lua_depth) +
                              " cannot be written");
    if (!lua_checkstack(L, 8)) return Error::bad_input(where + ": no room on Lua's stack to read it");
    path_.push_back(table);
    return Ok{};
  }
  void leave() { path_.pop_back(); }

private:
  std::vector<const void*> path_;
};

/// The number of elements when the table at `index` is a sequence 1…n (0 when empty),
/// or -1 when it has any other key.
lua_Integer sequence_length(lua_State* L, int index) {
  index = lua_absindex(L, index);
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
      lua_pop(L, 1);
      return -1;
    }
    ++count;
  }
  return static_cast<lua_Integer>(lua_rawlen(L, index)) == count ? count : -1;
}

/// Pushes `table[key]` without metamethods.
void raw_field(lua_State* L, int table, const std::string& key) {
  lua_pushlstring(L, key.data(), key.size());
  lua_rawget(L, table);
}

/// Whether `text` is UTF-8 as JSON and TOML text must be (no overlong forms, no
/// surrogates, nothing past U+10FFFF): the check of the JSON library that writes it.
bool utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

/// The string at `index`, where it is UTF-8; an error names `where`.
Result<std::string> utf8_string(lua_State* L, int index, const std::string& where) {
  std::size_t size = 0;
  const char* data = lua_tolstring(L, index, &size);
  std::string value(data, size);
  if (!utf8(value)) return Error::bad_input(where + ": a string that is not UTF-8 cannot be written");
  return value;
}

/// The keys of a table that is no sequence, as strings, sorted; an error names a key
/// that is neither a string nor a number.
Result<std::vector<std::string>> sorted_keys(lua_State* L, int index, const std::string& where) {
  index = lua_absindex(L, index);
  std::vector<std::string> keys;
  lua_pushnil(L);
  while (lua_next(L, index)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      auto key = utf8_string(L, -1, where);
      if (!key) {
        lua_pop(L, 1);
        return std::move(key).error();
      }
      keys.push_back(std::move(*key));
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      lua_pushvalue(L, -1);
      keys.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    } else {
      const std::string type = luaL_typename(L, -1);
      lua_pop(L, 1);
      return Error::bad_input(where + ": a key of type " + type + " cannot be written");
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string child(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

/// One Lua value as TOML++ holds it: a table whose keys are 1…n is an array (an empty
/// one too), any other a table.
using TomlValue = std::variant<bool, std::int64_t, double, std::string, toml::table, toml::array>;

Result<TomlValue> toml_value(lua_State* L, int index, const std::string& where, Descent& descent);

Status toml_table(lua_State* L, int index, const std::string& where, Descent& descent, toml::table& out) {
  auto keys = sorted_keys(L, index, where);
  ACTORPIPE_TRY(keys);
  for (const std::string& key : *keys) {
    raw_field(L, index, key);
    auto value = toml_value(L, -1, child(where, key), descent);
    lua_pop(L, 1);
    ACTORPIPE_TRY(value);
    std::visit([&](auto&& v) { out.insert_or_assign(key, std::move(v)); }, std::move(*value));
  }
  return Ok{};
}

Result<TomlValue> toml_value(lua_State* L, int index, const std::string& where, Descent& descent) {
  index = lua_absindex(L, index);
  switch (lua_type(L, index)) {
  case LUA_TBOOLEAN: return TomlValue(static_cast<bool>(lua_toboolean(L, index)));
  case LUA_TNUMBER:
    if (lua_isinteger(L, index)) return TomlValue(static_cast<std::int64_t>(lua_tointeger(L, index)));
    return TomlValue(static_cast<double>(lua_tonumber(L, index)));
  case LUA_TSTRING: {
    auto value = utf8_string(L, index, where);
    ACTORPIPE_TRY(value);
    return TomlValue(std::move(*value));
  }
  case LUA_TTABLE: {
    ACTORPIPE_TRY(descent.enter(L, index, where));
    auto value = [&]() -> Result<TomlValue> {
      const lua_Integer n = sequence_length(L, index);
      if (n < 0) {
        toml::table table;
        ACTORPIPE_TRY(toml_table(L, index, where, descent, table));
        return TomlValue(std::move(table));
      }
      toml::array array;
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, index, i);
        auto item = toml_value(L, -1, where + "[" + std::to_string(i) + "]", descent);
        lua_pop(L, 1);
        ACTORPIPE_TRY(item);
        std::visit([&](auto&& v) { array.push_back(std::move(v)); }, std::move(*item));
      }
      return TomlValue(std::move(array));
    }();
    descent.leave();
    return value;
  }
  default: return Error::bad_input(where + ": a " + luaL_typename(L, index) + " cannot be a job's value");
  }
}

Result<nlohmann::json> json_of(lua_State* L, int index, const std::string& where, Descent& descent) {
  index = lua_absindex(L, index);
  switch (lua_type(L, index)) {
  case LUA_TNIL: return nlohmann::json(nullptr);
  case LUA_TBOOLEAN: return nlohmann::json(static_cast<bool>(lua_toboolean(L, index)));
  case LUA_TNUMBER:
    if (lua_isinteger(L, index)) return nlohmann::json(static_cast<std::int64_t>(lua_tointeger(L, index)));
    return nlohmann::json(lua_tonumber(L, index));
  case LUA_TSTRING: {
    auto value = utf8_string(L, index, where);
    ACTORPIPE_TRY(value);
    return nlohmann::json(std::move(*value));
  }
  case LUA_TTABLE: {
    ACTORPIPE_TRY(descent.enter(L, index, where));
    auto value = [&]() -> Result<nlohmann::json> {
      const lua_Integer n = sequence_length(L, index);
      if (n >= 0) {
        nlohmann::json out = nlohmann::json::array();
        for (lua_Integer i = 1; i <= n; ++i) {
          lua_rawgeti(L, index, i);
          auto item = json_of(L, -1, where + "[" + std::to_string(i) + "]", descent);
          lua_pop(L, 1);
          ACTORPIPE_TRY(item);
          out.push_back(std::move(*item));
        }
        return out;
      }
      auto keys = sorted_keys(L, index, where);
      ACTORPIPE_TRY(keys);
      nlohmann::json out = nlohmann::json::object();
      for (const std::string& key : *keys) {
        raw_field(L, index, key);
        auto item = json_of(L, -1, child(where, key), descent);
        lua_pop(L, 1);
        ACTORPIPE_TRY(item);
        out[key] = std::move(*item);
      }
      return out;
    }();
    descent.leave();
    return value;
  }
  default: return Error::bad_input(where + ": a " + luaL_typename(L, index) + " cannot be written as JSON");
  }
}

} // namespace

void push_json(lua_State* L, const nlohmann::json& value) {
  luaL_checkstack(L, 4, "a JSON document nested too deep for Lua's stack");
  switch (value.type()) {
  case nlohmann::json::value_t::object:
    lua_createtable(L, 0, static_cast<int>(value.size()));
    for (const auto& [key, item] : value.items()) {
      if (item.is_null()) continue;
      push_json(L, item);
      lua_setfield(L, -2, key.c_str());
    }
    return;
  case nlohmann::json::value_t::array: {
    lua_createtable(L, static_cast<int>(value.size()), 0);
    lua_Integer i = 0;
    for (const auto& item : value) {
      push_json(L, item);
      lua_seti(L, -2, ++i);
    }
    return;
  }
  case nlohmann::json::value_t::string: lua_pushstring(L, value.get_ref<const std::string&>().c_str()); return;
  case nlohmann::json::value_t::boolean: lua_pushboolean(L, value.get<bool>()); return;
  case nlohmann::json::value_t::number_integer: lua_pushinteger(L, value.get<std::int64_t>()); return;
  case nlohmann::json::value_t::number_unsigned:
    lua_pushinteger(L, static_cast<lua_Integer>(value.get<std::uint64_t>()));
    return;
  case nlohmann::json::value_t::number_float: lua_pushnumber(L, value.get<double>()); return;
  default: lua_pushnil(L); return;
  }
}

Result<nlohmann::json> to_json(lua_State* L, int index, const std::string& where) {
  Descent descent;
  return json_of(L, index, where, descent);
}

Result<toml::table> to_toml(lua_State* L, int index) {
  if (lua_type(L, index) != LUA_TTABLE)
    return Error::bad_input(std::string("expected a table and found a ") + luaL_typename(L, index));
  index = lua_absindex(L, index);
  Descent descent;
  ACTORPIPE_TRY(descent.enter(L, index, "the table"));
  toml::table out;
  Status status = toml_table(L, index, "", descent, out);
  descent.leave();
  ACTORPIPE_TRY(status);
  return out;
}

} // namespace actorpipe::lua
