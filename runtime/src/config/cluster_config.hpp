#pragma once

/// Reads a cluster description from TOML (a cluster file, or a job's [cluster]).

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/error.hpp>

#include <toml++/toml.h>

#include <string>

namespace actorpipe::config {

/// `path` names the table in messages ("cluster", or "" for a cluster file's top level).
Result<ClusterSpec> read_cluster(const toml::table& table, const std::string& path);

} // namespace actorpipe::config
