#pragma once

/// What `plan`, `simulate`, `run` and `profile` share: the job file, the flags that
/// override its [plan] keys, loading the job with its plugins, and the progress of
/// measuring a profile and of planning.

#include "commands.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/training.hpp>

#include <functional>
#include <optional>

namespace actorpipe::cli {

struct JobArguments {
  std::string job;
  std::string profile, cluster, partitioner, mapper, scheduler;
  std::optional<std::string> stages, pipelines, micro_batches; ///< a number or "auto"
  std::vector<std::string> set;
};

/// The keys the flags set ("key=value", as --set takes them). The dedicated flags are
/// shorthands for --set; they come after it, so they win.
std::vector<std::string> job_overrides(const JobArguments& args);

/// Adds JOB and the override flags to `command`.
void add_job_arguments(CLI::App& command, JobArguments& args, CommonOptions& common);

/// The job with every override applied, and the plugins it can use.
struct LoadedJob {
  JobSpec job;
  PluginRegistry plugins;
  /// The job's data, when measuring its profile read it: a run goes on with it.
  std::shared_ptr<const TrainingData> data;
};
Result<LoadedJob> load(const JobArguments& args, const CommonOptions& common);

/// Progress of `measure_profile` on stderr: one line rewritten in place on a terminal,
/// about ten lines in a log.
std::function<void(std::size_t done, std::size_t passes)> measuring_progress();

/// Progress of `make_plan` on stderr once it has searched for a second (a quick plan
/// shows nothing): one line rewritten in place on a terminal, a line every tenth in a log.
PlanProgress planning_progress();

} // namespace actorpipe::cli
