/// `actorpipe simulate JOB.toml`: plan the job, then simulate it for several iterations,
/// with stragglers if asked, and report times, bubbles, memory and links.

#include "commands.hpp"
#include "job_arguments.hpp"

#include <actorpipe/planner.hpp>
#include <actorpipe/report.hpp>
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
  const JobSpec& job = loaded->job;
  const std::string spec = a.stragglers.value_or(job.simulate.stragglers);
  auto stragglers = parse_stragglers(spec, job.cluster);
  if (!stragglers) {
    const std::string where = a.stragglers ? "--stragglers: " : job.where("simulate.stragglers");
    return report(std::move(stragglers).error().with_context(where));
  }
  stragglers->seed = job.job.seed;

  auto plan = make_plan(job, loaded->plugins, planning_progress());
  if (!plan) return report(plan.error());
  SimulationOptions options;
  options.iterations = a.iterations.value_or(job.simulate.iterations);
  options.action_overhead_ms = job.plan.action_overhead_ms;
  options.optimizer_factor = optimizer_state_factor(job.train);
  options.stragglers = *stragglers;
  const std::string trace = a.trace.value_or(job.simulate.trace);
  options.trace = !trace.empty();
  auto result = simulate(*plan, job.profile, job.cluster, options);
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
