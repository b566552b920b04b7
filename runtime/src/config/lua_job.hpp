#pragma once

/// Jobs written in Lua: a file that returns a table with exactly the keys of a TOML job
/// file (docs/config.md), or a table a script builds. The table becomes a TOML table,
/// read by the same code as a job file, so a mistake is the same clear error, placed at
/// the FILE:LINE of the Lua source that wrote the key (SourceKeys).

#include "lua/lua_state.hpp"

#include <actorpipe/job.hpp>

#include <string>
#include <vector>

namespace actorpipe::lua {

/// Runs the Lua job file `path` (sandboxed, stopped after `timeout_s` if above 0) and
/// reads the table it returns, after the `--set` overrides.
Result<JobSpec> load_job_file(const std::string& path, const std::vector<std::string>& overrides,
                              double timeout_s = 10);

/// Reads the job table at `index`. `source` is the file its keys are placed in, and the
/// folder its relative paths are resolved against; `source_text` is that file's text
/// when the table was written there (empty: no lines are named).
Result<JobSpec> job_from_table(lua_State* L, int index, const std::string& source, const std::string& source_text,
                               const std::vector<std::string>& overrides);

} // namespace actorpipe::lua
