/// `actorpipe plan JOB.toml`: partition, map and schedule a job; print the plan, or
/// several plans side by side with --compare.

#include "commands.hpp"
#include "job_arguments.hpp"

#include <actorpipe/planner.hpp>
#include <actorpipe/plan_report.hpp>

#include "base/atomic_file.hpp"
#include "base/text.hpp"

#include <iostream>

namespace actorpipe::cli {

namespace {

struct PlanArguments {
  JobArguments job;
  bool json = false;
  std::string output;
  std::string compare; ///< "autopipe,dapple+sequential,..."
};

/// Plans the job once per "partitioner[+mapper]" entry of --compare.
Result<std::vector<Plan>> compare(const LoadedJob& loaded, const std::string& list) {
  std::vector<Plan> plans;
  for (const std::string& raw : text::split(list, ',')) {
    const std::string entry(text::trim(raw));
    if (entry.empty()) continue;
    JobSpec job = loaded.job;
    const auto plus = entry.find('+');
    job.plan.partitioner = entry.substr(0, plus);
    if (plus != std::string::npos) job.plan.mapper = entry.substr(plus + 1);
    job.origins["plan.partitioner"] = job.origins["plan.mapper"] = SourcePlace{"--compare " + entry};
    auto plan = make_plan(job, loaded.plugins, planning_progress());
    ACTORPIPE_TRY(plan);
    plans.push_back(std::move(*plan));
  }
  if (plans.empty()) return Error::bad_input("--compare: expected partitioner[+mapper],... and found nothing");
  return plans;
}

int plan(const PlanArguments& a, const CommonOptions& common) {
  auto loaded = load(a.job, common);
  if (!loaded) return report(loaded.error());
  const JobSpec& job = loaded->job;
  if (!a.compare.empty()) {
    auto plans = compare(*loaded, a.compare);
    if (!plans) return report(plans.error());
    const std::string json = comparison_to_json(*plans, job.profile, job.cluster);
    if (!a.output.empty())
      if (auto s = write_file_atomically(a.output, json); !s) return report(s.error());
    std::cout << (a.json ? json : format_comparison(*plans, job.cluster));
    return 0;
  }
  auto result = make_plan(job, loaded->plugins, planning_progress());
  if (!result) return report(result.error());
  const std::string json = plan_to_json(*result, job.profile, job.cluster);
  if (!a.output.empty())
    if (auto s = write_file_atomically(a.output, json); !s) return report(s.error());
  std::cout << (a.json ? json : format_plan(*result, job.profile, job.cluster));
  return 0;
}

} // namespace

void add_plan_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto args = std::make_shared<PlanArguments>();
  auto* command = app.add_subcommand("plan", "Partition, map and schedule a job; print the plan as a table or JSON");
  add_job_arguments(*command, args->job, common);
  command->add_flag("--json", args->json, "print the plan as JSON");
  command->add_option("-o,--output", args->output, "also write the plan as JSON to this file");
  command->add_option(
      "--compare", args->compare,
      "plan once per partitioner[+mapper] and print them side by side: --compare autopipe+hetero,dapple");
  command->callback([&run, &common, args] { run = [&common, args] { return plan(*args, common); }; });
}

} // namespace actorpipe::cli
