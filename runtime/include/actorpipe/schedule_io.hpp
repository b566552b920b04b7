#pragma once

/// Schedule files: a schedule as TOML that people can read, edit and give to `plan`,
/// `simulate` and `run` (docs/schedules.md).
///
///   name = "1f1b"
///   micro_batch_sizes = [8, 8, 8, 8]
///   stages = [
///     "F0 F1 F2 F3 B0 B1 B2 B3",
///     ...
///   ]
///
/// A schedule with chunks says how many and where they sit (`chunks = 2`, `shape =
/// "loop"` or `"v"`), and its actions name their chunk ("F3@1").

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/schedule.hpp>

#include <string>
#include <string_view>

namespace actorpipe {

/// The schedule in the file format above; parse_schedule reads it back unchanged.
ACTORPIPE_EXPORT std::string format_schedule(const Schedule& schedule);

/// Reads a schedule from text; `source` names it in messages ("FILE:LINE:COL: ...").
/// The result is validated: a deadlock is an error here, not a hang later.
ACTORPIPE_EXPORT Result<Schedule> parse_schedule(std::string_view text, const std::string& source);

ACTORPIPE_EXPORT Result<Schedule> load_schedule(const std::string& path);

} // namespace actorpipe
