#include "job_arguments.hpp"
#include "profile/measurement_text.hpp"

#include <actorpipe/training.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <utility>

#include <unistd.h>

#include "base/text.hpp"
#include "training_handoff.hpp"

namespace actorpipe::cli {

namespace {

/// The keys the dedicated flags set, each with what the user wrote: ("plan.stages=2",
/// "--stages 2").
std::vector<std::pair<std::string, std::string>> flag_overrides(const JobArguments& a) {
  std::vector<std::pair<std::string, std::string>> out;
  auto quoted = [&](const char* key, const char* flag, const std::string& value) {
    if (!value.empty())
      out.emplace_back(std::string(key) + "=" + text::toml_quote(value), std::string(flag) + " " + value);
  };
  quoted("model.profile", "--profile", a.profile);
  quoted("cluster", "--cluster", a.cluster);
  quoted("plan.partitioner", "--partitioner", a.partitioner);
  quoted("plan.mapper", "--mapper", a.mapper);
  quoted("plan.scheduler", "--scheduler", a.scheduler);
  // Numbers stay numbers; anything else ("auto", or a mistake) goes in as a string and
  // the job reader names what is wrong with it.
  auto count = [&](const char* key, const char* flag, const std::optional<std::string>& value) {
    if (!value) return;
    const bool digits = !value->empty() && value->find_first_not_of("0123456789") == std::string::npos;
    out.emplace_back(std::string(key) + "=" + (digits ? *value : text::toml_quote(*value)),
                     std::string(flag) + " " + *value);
  };
  count("plan.stages", "--stages", a.stages);
  count("plan.pipelines", "--pipelines", a.pipelines);
  count("plan.micro_batches", "--micro-batches", a.micro_batches);
  return out;
}

/// The job's reader names an override's place "--set KEY=VALUE"; for a key a dedicated
/// flag set, the place is the flag as the user wrote it, in the job's record of where
/// each key was set (which later errors, the planner's, name) and in an error.
Result<JobSpec> with_flag_places(Result<JobSpec> result, const JobArguments& a) {
  for (const auto& [assignment, flag] : flag_overrides(a)) {
    const std::string set = "--set " + assignment;
    if (result) {
      for (auto& [key, place] : result->origins)
        if (place.file == set) place.file = flag;
    } else if (Error e = result.error(); e.place && e.place->file == set && e.message.starts_with(set)) {
      e.message = flag + e.message.substr(set.size());
      e.place->file = flag;
      return e;
    }
  }
  return result;
}

} // namespace

std::vector<std::string> job_overrides(const JobArguments& a) {
  std::vector<std::string> out = a.set;
  for (auto& [assignment, flag] : flag_overrides(a))
    out.push_back(std::move(assignment));
  return out;
}

void add_job_arguments(CLI::App& command, JobArguments& args, CommonOptions& common) {
  command.add_option("JOB", args.job, "job file (TOML, or Lua: docs/lua.md)")->required();
  command.add_option("--profile", args.profile, "model profile (overrides model.profile)");
  command.add_option("--cluster", args.cluster, "cluster file (overrides cluster)");
  command.add_option("--partitioner", args.partitioner, "partitioner plugin (overrides plan.partitioner)");
  command.add_option("--mapper", args.mapper, "mapper plugin (overrides plan.mapper)");
  command.add_option("--scheduler", args.scheduler, "scheduler plugin (overrides plan.scheduler)");
  command.add_option("--stages", args.stages, "stages per pipeline, or auto (overrides plan.stages)");
  command.add_option("--pipelines", args.pipelines, "parallel pipelines, or auto (overrides plan.pipelines)");
  command.add_option("--micro-batches", args.micro_batches,
                     "micro-batches per pipeline, or auto (overrides plan.micro_batches)");
  command.add_option("--set", args.set, "override any job key: --set train.batch_size=128 (repeatable)");
  command.add_option("--plugin-path", common.plugin_path, "also search this folder or file for plugins (repeatable)");
}

Result<LoadedJob> load(const JobArguments& args, const CommonOptions& common) {
  auto job = with_flag_places(load_job(args.job, job_overrides(args)), args);
  ACTORPIPE_TRY(job);
  auto registry = PluginRegistry::discover(PluginRegistry::search_path(job->plan.plugin_path, common.plugin_path));
  ACTORPIPE_TRY(registry);
  // A zoo model named without a profile is measured here, as `actorpipe profile` would.
  std::shared_ptr<const TrainingData> data;
#ifdef ACTORPIPE_CLI_CORE
  if (job->profile.blocks.empty()) return hand_over_to_training();
#else
  if (job->profile.blocks.empty()) {
    auto loaded = load_training_data(*job, &*registry);
    ACTORPIPE_TRY(loaded);
    data = std::move(*loaded);
    std::cerr << "actorpipe: measuring the profile of model '" << option_name(job->model.zoo)
              << "' (no model.profile given)\n";
    MeasureOptions options;
    options.data = data;
    options.on_pass = measuring_progress();
    auto profile = measure_profile(*job, options);
    ACTORPIPE_TRY(profile);
    std::cerr << "actorpipe: " << describe_measurement(*profile, options.repeats) << "\n";
    job->profile = std::move(*profile);
  }
#endif
  return LoadedJob{std::move(*job), std::move(*registry), std::move(data)};
}

std::function<void(std::size_t, std::size_t)> measuring_progress() {
  return [terminal = ::isatty(STDERR_FILENO) != 0](std::size_t done, std::size_t passes) {
    if (terminal)
      std::cerr << "\rmeasuring pass " << done << "/" << passes << (done == passes ? "\n" : "") << std::flush;
    else if (done % std::max<std::size_t>(1, passes / 10) == 0 || done == passes)
      std::cerr << "measuring pass " << done << "/" << passes << "\n";
  };
}

PlanProgress planning_progress() {
  struct Shown {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    int percent = -1;
  };
  return [terminal = ::isatty(STDERR_FILENO) != 0, shown = std::make_shared<Shown>()](double fraction,
                                                                                      const std::string& doing) {
    if (std::chrono::steady_clock::now() - shown->started < std::chrono::seconds(1)) return;
    // A search's share of its work is an estimate, which may dip as it learns more; the
    // line never goes back.
    const int percent = std::max(static_cast<int>(fraction * 100), shown->percent);
    const bool done = fraction >= 1;
    if (percent == shown->percent || (!terminal && !done && percent / 10 == shown->percent / 10)) return;
    shown->percent = percent;
    std::cerr << (terminal ? "\r" : "") << "planning " << percent << "% (" << doing << ")"
              << (terminal && !done ? "   " : "\n") << std::flush;
  };
}

} // namespace actorpipe::cli
