/// predicted_step_ms(): the plan's step time as this machine's cores will run it, or
/// as emulated devices model it.

#include <actorpipe/simulator.hpp>
#include <actorpipe/training.hpp>

#include "base/boundary.hpp"
#include "train/cores.hpp"

#include <numeric>

namespace actorpipe {

static Result<double> predicted_step_ms_unguarded(const JobSpec& job, const Plan& plan) {
  const std::vector<int> cores = train::usable_cores();
  const std::size_t S = plan.stages.size(), actors = plan.pipelines * S, devices = job.cluster.devices.size();
  SimulationOptions options;
  options.iterations = 10; // the steady state, as a run's median step sees it
  options.action_overhead_ms = job.plan.action_overhead_ms;
  options.optimizer_factor = optimizer_state_factor(job.train);
  // Emulated devices take their modelled times whatever cores they share, and the run
  // reports modelled time: the plan's cluster as it is, with the emulated stragglers.
  bool emulated = true;
  for (const auto& pipeline : plan.devices)
    for (const DeviceId d : pipeline)
      emulated = emulated && job.cluster.devices.at(d).kind == "emulated";
  if (emulated) {
    if (!job.emulation.stragglers.empty()) {
      auto parsed = parse_stragglers(job.emulation.stragglers, job.cluster);
      if (!parsed) return Error::bad_input(job.where("emulation.stragglers") + parsed.error().message);
      options.stragglers = std::move(*parsed);
      options.stragglers.seed = job.job.seed;
    }
    auto report = simulate(plan, job.profile, job.cluster, options);
    ACTORPIPE_TRY(report);
    return report->iteration_time_ms;
  }
  options.processors.resize(devices);
  std::iota(options.processors.begin(), options.processors.end(), std::size_t{0});
  for (std::size_t p = 0; p < plan.pipelines; ++p)
    for (std::size_t s = 0; s < S; ++s) {
      // Where a run binds the actor, if it does: the same rule as the job actor's.
      const std::optional<int> core = train::stage_core(cores, p * S + s, actors);
      if (!core) return plan.iteration_time_ms;
      options.processors.at(plan.devices[p][s]) = devices + static_cast<std::size_t>(*core);
    }
  auto report = simulate(plan, job.profile, job.cluster, options);
  ACTORPIPE_TRY(report);
  return report->iteration_time_ms;
}

Result<double> predicted_step_ms(const JobSpec& job, const Plan& plan) {
  return at_boundary("predicting the step", [&] { return predicted_step_ms_unguarded(job, plan); });
}

} // namespace actorpipe
