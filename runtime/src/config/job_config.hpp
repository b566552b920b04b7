#pragma once

/// Reads a job file (load_job() of job.hpp) from its parsed TOML.

#include <actorpipe/job.hpp>

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <vector>

namespace actorpipe::config {

/// Where each key of a table built rather than parsed was written (a Lua job's), by its
/// key path ("plan.stages", "cluster.servers[1].nic").
using KeyPlaces = std::function<SourcePlace(const std::string& key_path)>;

/// The job in `root`, read from `path` (which names it in messages and anchors its
/// relative paths), after the `--set KEY=VALUE` overrides; its profile file is loaded.
/// Keys whose nodes have no place of their own are placed by `places`: their origins,
/// and the errors about them.
Result<JobSpec> read_job(toml::table root, const std::string& path, const std::vector<std::string>& overrides,
                         const KeyPlaces& places = {});

} // namespace actorpipe::config
