/// `actorpipe simulate JOB.toml`: plan the job, then simulate it for several iterations,
/// with stragglers if asked, and report times, bubbles, memory and links.

#include "commands.hpp"
#include "job_arguments.hpp"

#include <actorpipe/planner.hpp>
#include <actorpipe/simulation_report.hpp>
#include <actorpipe/simulator.hpp>

#include "base/atomic_file.hpp"

#include <iostream>

namespace actorpipe::cli {

namespace {

struct SimulateArguments {
  JobArguments job;
  std::optional<std::uint32_t> iterations;
  std::optional<std::string> stragglers, trace;
  bool json = false;
};

int simulate_job(const SimulateArguments& a, const CommonOptions& common) {
  auto loaded = load(a.job, common);
  if (!loaded) return report(loaded.error());
  JobSpec& job = loaded->job;
  if (a.stragglers) job.simulate.stragglers = *a.stragglers;
  if (a.iterations) job.simulate.iterations = *a.iterations;
  if (a.trace) job.simulate.trace = *a.trace;
  auto options = simulation_options(job);
  if (!options) {
    const std::string where = a.stragglers ? "--stragglers: " : job.where("simulate.stragglers");
    return report(std::move(options).error().with_context(where));
  }
  auto plan = make_plan(job, loaded->plugins, planning_progress());
  if (!plan) return report(plan.error());
  const std::string& trace = job.simulate.trace;
  auto result = simulate(*plan, job.profile, job.cluster, *options);
  if (!result) return report(result.error());
  if (!trace.empty())
    if (auto s = write_file_atomically(trace, trace_json(*result, *plan, job.cluster)); !s) return report(s.error());
  std::cout << (a.json ? simulation_to_json(*result, *plan, job.cluster)
                       : format_simulation(*result, *plan, job.cluster));
  return 0;
}

} // namespace

void add_simulate_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto args = std::make_shared<SimulateArguments>();
  auto* command = app.add_subcommand("simulate", "Plan a job and simulate it: iteration time, bubbles, memory, links");
  add_job_arguments(*command, args->job, common);
  command->add_option("--iterations", args->iterations, "iterations to simulate (overrides simulate.iterations)")
      ->check(CLI::PositiveNumber);
  command->add_option("--stragglers", args->stragglers,
                      "straggler spec, e.g. 'delay:p=0.05,ms=20;slow:device=fast/gpu0,factor=2,from=0,to=1s'");
  command->add_option("--trace", args->trace, "write a Perfetto/Chrome trace (JSON) here");
  command->add_flag("--json", args->json, "print the report as JSON");
  command->callback([&run, &common, args] { run = [&common, args] { return simulate_job(*args, common); }; });
}

} // namespace actorpipe::cli
