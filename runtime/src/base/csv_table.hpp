#pragma once

/// Rows of JSON objects as CSV: what a script's write_csv and a run's metrics.csv write.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace actorpipe {

/// A CSV field: text as is, quoted where it holds a comma, a quote or a line break;
/// numbers as JSON writes them (the shortest that reads back); null empty.
std::string csv_field(const nlohmann::json& value);

/// A header of `columns`, then a line a row of `rows` (JSON objects), empty where a row
/// lacks a column.
std::string csv_table(const std::vector<std::string>& columns, const std::vector<nlohmann::json>& rows);

} // namespace actorpipe
