/// `actorpipe plan JOB.toml`: partition and map a job, print the plan.

#include "commands.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/report.hpp>

#include "atomic_file.hpp"
#include "text.hpp"

#include <iostream>
#include <optional>

namespace actorpipe::cli {

namespace {

struct PlanArguments {
  std::string job;
  bool json = false;
  std::string output;
  std::string profile, cluster, partitioner, mapper;
  std::optional<std::uint32_t> stages, pipelines, micro_batches;
  std::vector<std::string> set;
};

/// The dedicated flags are shorthands for --set; they come after it, so they win.
std::vector<std::string> overrides(const PlanArguments& a) {
  std::vector<std::string> out = a.set;
  if (!a.profile.empty()) out.push_back("model.profile=" + text::toml_quote(a.profile));
  if (!a.cluster.empty()) out.push_back("cluster=" + text::toml_quote(a.cluster));
  if (!a.partitioner.empty()) out.push_back("plan.partitioner=" + text::toml_quote(a.partitioner));
  if (!a.mapper.empty()) out.push_back("plan.mapper=" + text::toml_quote(a.mapper));
  if (a.stages) out.push_back("plan.stages=" + std::to_string(*a.stages));
  if (a.pipelines) out.push_back("plan.pipelines=" + std::to_string(*a.pipelines));
  if (a.micro_batches) out.push_back("plan.micro_batches=" + std::to_string(*a.micro_batches));
  return out;
}

int plan(const PlanArguments& a, const CommonOptions& common) {
  auto job = load_job(a.job, overrides(a));
  if (!job) return report(job.error());
  std::vector<std::string> folders = PluginRegistry::default_folders();
  folders.insert(folders.end(), job->plan.plugin_path.begin(), job->plan.plugin_path.end());
  folders.insert(folders.end(), common.plugin_path.begin(), common.plugin_path.end());
  auto registry = PluginRegistry::discover(folders);
  if (!registry) return report(registry.error());
  auto result = make_plan(*job, *registry);
  if (!result) return report(result.error());

  const std::string json = plan_to_json(*result, job->profile, job->cluster);
  if (!a.output.empty())
    if (auto s = write_file_atomically(a.output, json); !s) return report(s.error());
  std::cout << (a.json ? json : format_plan(*result, job->profile, job->cluster));
  return 0;
}

} // namespace

void add_plan_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto args = std::make_shared<PlanArguments>();
  auto* command = app.add_subcommand("plan", "Partition and map a job; print the plan as a table or JSON");
  command->add_option("JOB", args->job, "job file (TOML)")->required();
  command->add_flag("--json", args->json, "print the plan as JSON");
  command->add_option("-o,--output", args->output, "also write the plan as JSON to this file");
  command->add_option("--profile", args->profile, "model profile (overrides model.profile)");
  command->add_option("--cluster", args->cluster, "cluster file (overrides cluster)");
  command->add_option("--partitioner", args->partitioner, "partitioner plugin (overrides plan.partitioner)");
  command->add_option("--mapper", args->mapper, "mapper plugin (overrides plan.mapper)");
  command->add_option("--stages", args->stages, "stages per pipeline (overrides plan.stages)")->check(CLI::PositiveNumber);
  command->add_option("--pipelines", args->pipelines, "parallel pipelines (overrides plan.pipelines)")->check(CLI::PositiveNumber);
  command->add_option("--micro-batches", args->micro_batches, "micro-batches per pipeline (overrides plan.micro_batches)")
      ->check(CLI::PositiveNumber);
  command->add_option("--set", args->set, "override any job key: --set train.batch_size=128 (repeatable)");
  command->add_option("--plugin-path", common.plugin_path, "also search this folder or file for plugins (repeatable)");
  command->callback([&run, &common, args] { run = [&common, args] { return plan(*args, common); }; });
}

} // namespace actorpipe::cli
