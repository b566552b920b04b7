#pragma once

/// Reads a cluster description from TOML (a cluster file, or a job's [cluster]).

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/error.hpp>

#include <toml++/toml.h>

#include <string>

namespace actorpipe::config {

/// `path` names the table in messages ("cluster", or "" for a cluster file's top level).
Result<ClusterSpec> read_cluster(const toml::table& table, const std::string& path);

/// Parses a TOML file; a syntax error comes back as "FILE:LINE:COL: what".
Result<toml::table> parse_toml_file(const std::string& path);

} // namespace actorpipe::config
