/// simulation_options(): what a job says about simulating it.

#include <actorpipe/job.hpp>
#include <actorpipe/simulator.hpp>

namespace actorpipe {

Result<SimulationOptions> simulation_options(const JobSpec& job) {
  auto stragglers = parse_stragglers(job.simulate.stragglers, job.cluster);
  ACTORPIPE_TRY(stragglers);
  stragglers->seed = job.job.seed;
  SimulationOptions options;
  options.iterations = job.simulate.iterations;
  options.action_overhead_ms = job.plan.action_overhead_ms;
  options.optimizer_factor = optimizer_state_factor(job.train);
  options.cuda_graphs = job.train.cuda_graphs;
  options.stragglers = std::move(*stragglers);
  options.trace = !job.simulate.trace.empty();
  return options;
}

} // namespace actorpipe
