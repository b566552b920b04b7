#include "plugin/lua_data_arrays.hpp"

#include "base/scope_exit.hpp"

#include <lua.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace actorpipe::lua {

namespace {

/// Reads numbers of a nested list in order, checking that every list at one depth is
/// as long as the first there (a ragged array has no shape).
class NestedReader {
public:
  NestedReader(lua_State* L, ElementType type, std::string name) : L_(L), type_(type), name_(std::move(name)) {}

  Status read(int index, std::size_t depth, const std::string& where) {
    index = lua_absindex(L_, index);
    const auto n = static_cast<std::int64_t>(lua_rawlen(L_, index));
    if (depth == shape_.size()) shape_.resize(depth + 1, n);
    if (shape_[depth] != n)
      return Error::bad_input(where + ": a list of " + std::to_string(n) + " where the others at this depth hold " +
                              std::to_string(shape_[depth]) + " (an array is not ragged)");
    for (std::int64_t i = 1; i <= n; ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      const int kind = lua_rawgeti(L_, index, i);
      Status s = Ok{};
      if (kind == LUA_TTABLE) {
        if (leaf_depth_ && *leaf_depth_ == depth)
          s = Error::bad_input(at + ": a list where a number is expected");
        else
          s = read(-1, depth + 1, at);
      } else if (kind == LUA_TNUMBER || kind == LUA_TBOOLEAN) {
        if (!leaf_depth_) leaf_depth_ = depth;
        if (*leaf_depth_ != depth)
          s = Error::bad_input(at + ": a number where a list is expected");
        else
          s = put(at);
      } else {
        s = Error::bad_input(at + ": expected a number or a list, found a " + std::string(luaL_typename(L_, -1)));
      }
      lua_pop(L_, 1);
      ACTORPIPE_TRY(s);
    }
    return Ok{};
  }

  /// `values` as a flat list with `shape` given.
  Status read_flat(int index, std::vector<std::int64_t> shape, const std::string& where) {
    leaf_depth_ = 0;
    ACTORPIPE_TRY(read(index, 0, where));
    std::int64_t product = 1;
    for (std::int64_t d : shape)
      if (d < 0 || __builtin_mul_overflow(product, d, &product))
        return Error::bad_input(name_ + ".shape: sizes must be ≥ 0 and their product must fit");
    if (product != shape_.front())
      return Error::bad_input(where + ": " + std::to_string(shape_.front()) + " values for shape " + shape_text(shape) +
                              ", which holds " + std::to_string(product));
    shape_ = std::move(shape);
    return Ok{};
  }

  DataArray take() {
    if (shape_.empty()) shape_.push_back(0);
    return DataArray{type_, std::move(shape_), std::move(bytes_)};
  }

  static std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string out = "{";
    for (std::size_t i = 0; i < shape.size(); ++i)
      out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "}";
  }

private:
  template <typename T> void append(T value) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }

  /// The value on top as one element of the array's type.
  Status put(const std::string& at) {
    if (type_ == ElementType::boolean) {
      if (!lua_isboolean(L_, -1)) return Error::bad_input(at + ": expected true or false for a bool array");
      append<std::uint8_t>(lua_toboolean(L_, -1) ? 1 : 0);
      return Ok{};
    }
    if (!lua_isnumber(L_, -1) || lua_isboolean(L_, -1))
      return Error::bad_input(at + ": expected a number, found a " + std::string(luaL_typename(L_, -1)));
    switch (type_) {
    case ElementType::float16: return Error::bad_input(name_ + ": float16 is for npy files; give float32");
    case ElementType::float32: append(static_cast<float>(lua_tonumber(L_, -1))); return Ok{};
    case ElementType::float64: append(static_cast<double>(lua_tonumber(L_, -1))); return Ok{};
    default: break;
    }
    lua_Integer whole = 0;
    if (lua_isinteger(L_, -1))
      whole = lua_tointeger(L_, -1);
    else {
      const double x = lua_tonumber(L_, -1);
      if (x != std::floor(x) || !(std::fabs(x) < 9.2e18))
        return Error::bad_input(at + ": " + lua_tostring(L_, -1) + " is not a whole number, as " +
                                std::string(element_type_name(type_)) + " elements are");
      whole = static_cast<lua_Integer>(x);
    }
    const auto fits = [&]<typename T>(T) -> Status {
      if (whole < static_cast<lua_Integer>(std::numeric_limits<T>::min()) ||
          (std::numeric_limits<T>::max() < std::numeric_limits<lua_Integer>::max() &&
           whole > static_cast<lua_Integer>(std::numeric_limits<T>::max())))
        return Error::bad_input(at + ": " + std::to_string(whole) + " does not fit in " +
                                std::string(element_type_name(type_)));
      append(static_cast<T>(whole));
      return Ok{};
    };
    switch (type_) {
    case ElementType::int8: return fits(std::int8_t{});
    case ElementType::uint8: return fits(std::uint8_t{});
    case ElementType::int16: return fits(std::int16_t{});
    case ElementType::uint16: return fits(std::uint16_t{});
    case ElementType::int32: return fits(std::int32_t{});
    case ElementType::uint32: return fits(std::uint32_t{});
    case ElementType::uint64: return fits(std::uint64_t{});
    default: return fits(std::int64_t{});
    }
  }

  lua_State* L_;
  ElementType type_;
  std::string name_;
  std::vector<std::int64_t> shape_;
  std::vector<std::byte> bytes_;
  std::optional<std::size_t> leaf_depth_;
};

std::optional<ElementType> type_named(std::string_view name) {
  for (int t = 0; t <= static_cast<int>(ElementType::float64); ++t)
    if (element_type_name(static_cast<ElementType>(t)) == name) return static_cast<ElementType>(t);
  return std::nullopt;
}

/// The array in field `name` of the table at `index`; absent: nullopt.
Result<std::optional<DataArray>> read_array(lua_State* L, int index, const char* name, ElementType fallback) {
  const int kind = lua_getfield(L, index, name);
  const int top = lua_gettop(L);
  const ScopeExit restore([L, top] { lua_settop(L, top - 1); }); // the field and all above it
  if (kind == LUA_TNIL) return std::optional<DataArray>{};
  if (kind != LUA_TTABLE)
    return Error::bad_input(std::string(name) +
                            ": expected a list of numbers or {type =, shape =, values =}, found a " +
                            luaL_typename(L, -1));
  const int array = top;
  if (lua_getfield(L, array, "values") == LUA_TNIL) { // a nested list
    lua_pop(L, 1);
    NestedReader reader(L, fallback, name);
    ACTORPIPE_TRY(reader.read(array, 0, name));
    return std::optional<DataArray>{reader.take()};
  }
  const int values = lua_gettop(L);
  ElementType type = fallback;
  if (lua_getfield(L, array, "type") != LUA_TNIL) {
    const char* text = lua_tostring(L, -1);
    const auto named = text ? type_named(text) : std::nullopt;
    if (!named)
      return Error::bad_input(std::string(name) + ".type: '" + (text ? text : "?") +
                              "' is not bool, int8 … uint64, float32 or float64");
    type = *named;
  }
  lua_pop(L, 1);
  for (lua_pushnil(L); lua_next(L, array); lua_pop(L, 1)) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (std::strcmp(key, "type") != 0 && std::strcmp(key, "shape") != 0 && std::strcmp(key, "values") != 0)
      return Error::bad_input(std::string(name) + ": unknown field '" + key + "' (type, shape, values)");
  }
  NestedReader reader(L, type, name);
  if (lua_getfield(L, array, "shape") == LUA_TNIL) {
    lua_pop(L, 1);
    ACTORPIPE_TRY(reader.read(values, 0, std::string(name) + ".values"));
  } else {
    std::vector<std::int64_t> shape;
    const auto n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_rawgeti(L, -1, i);
      const bool whole = lua_isinteger(L, -1);
      shape.push_back(whole ? lua_tointeger(L, -1) : -1);
      lua_pop(L, 1);
      if (!whole)
        return Error::bad_input(std::string(name) + ".shape[" + std::to_string(i) + "]: expected a whole number");
    }
    lua_pop(L, 1);
    ACTORPIPE_TRY(reader.read_flat(values, std::move(shape), std::string(name) + ".values"));
  }
  return std::optional<DataArray>{reader.take()};
}

} // namespace

void push_data_request(lua_State* L, const DataRequest& request) {
  lua_createtable(L, 0, 4);
  lua_createtable(L, 0, static_cast<int>(request.options.size()));
  for (const auto& [key, value] : request.options) {
    lua_pushlstring(L, value.data(), value.size());
    lua_setfield(L, -2, key.c_str());
  }
  lua_setfield(L, -2, "options");
  lua_pushlstring(L, request.path.data(), request.path.size());
  lua_setfield(L, -2, "path");
  lua_pushinteger(L, static_cast<lua_Integer>(request.seed));
  lua_setfield(L, -2, "seed");
  lua_pushinteger(L, request.context);
  lua_setfield(L, -2, "context");
}

Result<DataSplits> read_data_splits(lua_State* L, int index) {
  index = lua_absindex(L, index);
  if (lua_type(L, index) != LUA_TTABLE)
    return Error::bad_input(std::string("expected {inputs = ..., labels = ...}, found a ") + luaL_typename(L, index));
  for (lua_pushnil(L); lua_next(L, index); lua_pop(L, 1)) {
    const std::string key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
    if (key != "inputs" && key != "labels" && key != "test_inputs" && key != "test_labels") {
      lua_settop(L, index);
      return Error::bad_input("unknown field '" + key + "' (inputs, labels, test_inputs, test_labels)");
    }
  }
  DataSplits splits;
  const std::pair<const char*, DataArray*> fields[] = {{"inputs", &splits.inputs},
                                                       {"labels", &splits.labels},
                                                       {"test_inputs", &splits.test_inputs},
                                                       {"test_labels", &splits.test_labels}};
  for (const auto& [name, into] : fields) {
    const bool labels = std::strstr(name, "labels") != nullptr;
    auto array = read_array(L, index, name, labels ? ElementType::int64 : ElementType::float32);
    ACTORPIPE_TRY(array);
    if (*array)
      *into = std::move(**array);
    else if (std::strncmp(name, "test_", 5) != 0)
      return Error::bad_input(std::string("no ") + name);
  }
  if (splits.test_inputs.shape.empty() != splits.test_labels.shape.empty())
    return Error::bad_input("test_inputs and test_labels come together, or neither does");
  return splits;
}

} // namespace actorpipe::lua
