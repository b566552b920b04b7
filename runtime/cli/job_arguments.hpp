#pragma once

/// What `plan` and `simulate` share: the job file, the flags that override its [plan]
/// keys, and loading the job with its plugins.

#include "commands.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/plugin_registry.hpp>

#include <optional>

namespace actorpipe::cli {

struct JobArguments {
  std::string job;
  std::string profile, cluster, partitioner, mapper, scheduler;
  std::optional<std::string> stages, pipelines, micro_batches; ///< a number or "auto"
  std::vector<std::string> set;
};

/// Adds JOB and the override flags to `command`.
void add_job_arguments(CLI::App& command, JobArguments& args, CommonOptions& common);

/// The job with every override applied, and the plugins it can use.
struct LoadedJob {
  JobSpec job;
  PluginRegistry plugins;
};
Result<LoadedJob> load(const JobArguments& args, const CommonOptions& common);

} // namespace actorpipe::cli
