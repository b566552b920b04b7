#pragma once

/// A run's metrics.jsonl as CSV, for spreadsheets and pandas: one row a line, a column
/// for every key any line has (kind, step and epoch first, the rest as they first
/// appear: a line's keys are in alphabetical order), empty where a line lacks it.

#include <string>
#include <string_view>

namespace actorpipe::tracking {

std::string metrics_csv(std::string_view metrics_jsonl);

} // namespace actorpipe::tracking
