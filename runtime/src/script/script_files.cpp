/// The module's file functions: write_json and write_csv, into the script's output
/// folder only, each file written atomically; read_json and read_metrics, of files a
/// script may read (readable_file()).

#include "script/script_module.hpp"

#include "base/atomic_file.hpp"
#include "base/csv_table.hpp"
#include "base/input_file.hpp"
#include "lua/lua_values.hpp"

#include <actorpipe/training.hpp>

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
  std::vector<nlohmann::json> table;
  for (const auto& row : *rows) {
    if (!row.is_object())
      return Error::bad_input("write_csv: rows[" + std::to_string(table.size() + 1) +
                              "] is not a table of column = value");
    table.push_back(row);
  }
  ACTORPIPE_TRY(write_file_atomically(*path, csv_table(columns, table)));
  lua_pushstring(L, path->c_str());
  return 1;
}

/// read_json(file): the file's JSON as Lua values.
Result<int> read_json_fn(lua_State* L) {
  auto path = readable_file(L, 1, "read_json");
  ACTORPIPE_TRY(path);
  auto text = read_file(*path);
  ACTORPIPE_TRY(text);
  const auto value = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Error::bad_input(*path + ": not JSON");
  push_json(L, value);
  return 1;
}

/// read_metrics(run): the lines of a run's metrics.jsonl (its folder, or the file), as
/// a list of tables; a line cut short by a killed run is left out.
Result<int> read_metrics_fn(lua_State* L) {
  auto path = readable_file(L, 1, "read_metrics", metrics_file);
  ACTORPIPE_TRY(path);
  auto text = read_file(*path);
  ACTORPIPE_TRY(text);
  nlohmann::json lines = nlohmann::json::array();
  for (std::size_t at = 0, end; (end = text->find('\n', at)) != std::string::npos; at = end + 1) {
    auto line = nlohmann::json::parse(text->substr(at, end - at), nullptr, /*allow_exceptions=*/false);
    if (line.is_object()) lines.push_back(std::move(line));
  }
  push_json(L, lines);
  return 1;
}

} // namespace

void add_file_functions(lua_State* L, int module) {
  set_functions(L, module,
                {{"write_json", entry<write_json_fn>},
                 {"write_csv", entry<write_csv_fn>},
                 {"read_json", entry<read_json_fn>},
                 {"read_metrics", entry<read_metrics_fn>}});
}

} // namespace actorpipe::lua
