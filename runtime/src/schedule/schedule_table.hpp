#pragma once

/// A schedule file's TOML table read into a Schedule: parse_schedule()'s reader, and a
/// Lua plugin's schedule table's (plugin/plugin_values.cpp).

#include <actorpipe/schedule.hpp>

#include <toml++/toml.h>

#include <string>

namespace actorpipe {

/// The schedule in `root`, validated; `source` names it in messages (and places the
/// errors of a table whose nodes have no places of their own).
Result<Schedule> read_schedule_table(const toml::table& root, const std::string& source);

} // namespace actorpipe
