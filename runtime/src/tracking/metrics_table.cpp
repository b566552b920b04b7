#include "tracking/metrics_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

namespace actorpipe::tracking {

namespace {

/// A CSV field: numbers as JSON writes them (shortest round trip), text quoted where
/// it holds a comma, a quote or a line break.
std::string field(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (!value.is_string()) return value.dump();
  const std::string& s = value.get_ref<const std::string&>();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

} // namespace

std::string metrics_csv(std::string_view metrics_jsonl) {
  std::vector<nlohmann::json> rows;
  std::vector<std::string> columns{"kind", "step", "epoch"};
  std::istringstream lines{std::string(metrics_jsonl)};
  for (std::string line; std::getline(lines, line);) {
    auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!row.is_object()) continue;
    for (const auto& [key, value] : row.items())
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    rows.push_back(std::move(row));
  }
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c)
    out += (c ? "," : "") + columns[c];
  out += "\n";
  for (const nlohmann::json& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      if (const auto it = row.find(columns[c]); it != row.end()) out += field(*it);
    }
    out += "\n";
  }
  return out;
}

} // namespace actorpipe::tracking
