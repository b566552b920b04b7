/// The module's file functions: write_json and write_csv, into the script's output
/// folder only, each file written atomically.

#include "script/script_module.hpp"

#include "base/atomic_file.hpp"
#include "lua/lua_values.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace actorpipe::lua {

namespace {

/// write_json(name, value): the file's path.
Result<int> write_json_fn(lua_State* L) {
  auto path = output_file(L, 1);
  ACTORPIPE_TRY(path);
  auto value = to_json(L, 2, "value");
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
  auto rows = to_json(L, 2, "rows");
  ACTORPIPE_TRY(rows);
  if (!rows->is_array()) return Error::bad_input("write_csv: rows must be a list of tables");
  std::vector<std::string> columns;
  if (!lua_isnoneornil(L, 3)) {
    auto given = to_json(L, 3, "columns");
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

} // namespace

void add_file_functions(lua_State* L, int module) {
  set_functions(L, module, {{"write_json", entry<write_json_fn>}, {"write_csv", entry<write_csv_fn>}});
}

} // namespace actorpipe::lua
