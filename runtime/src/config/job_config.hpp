#pragma once

/// Reads a job file (load_job() of job.hpp) from its parsed TOML.

#include <actorpipe/job.hpp>

#include <toml++/toml.h>

#include <string>
#include <vector>

namespace actorpipe::config {

/// The job in `root`, read from `path` (which names it in messages and anchors its
/// relative paths), after the `--set KEY=VALUE` overrides; its profile file is loaded.
Result<JobSpec> read_job(toml::table root, const std::string& path, const std::vector<std::string>& overrides);

} // namespace actorpipe::config
