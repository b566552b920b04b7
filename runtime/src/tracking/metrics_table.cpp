#include "tracking/metrics_table.hpp"
#include "base/csv_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

namespace actorpipe::tracking {

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
  return csv_table(columns, rows);
}

} // namespace actorpipe::tracking
