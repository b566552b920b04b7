/// Partitioner `autopipe` (AutoPipe-H): cuts at sub-block granularity for the shortest
/// iteration on the devices and links the stages are placed on.
///
/// A plan is judged by its iteration time, so autopipe minimises the planner's own
/// estimate of it (IterationModel: the simulator run on one representative pipeline,
/// with stage compute on each stage's device and every cut's sends over the links its
/// placement gives it, shared links priced as shared). The search:
///   1. the exact min-max compute split, with memory as a hard limit (balanced_split);
///   2. the exact min-max split of compute plus the sends at each stage's cuts, with
///      sends weighed fully and by half, and under each bound the split that spreads
///      the work evenly (send_aware_split);
///   3. from the best of these by the estimate, cut-by-cut descent on the estimate
///      (iteration_search), within an evaluation budget that grows with the stages.
/// Where no cut costs anything to send over (infinitely fast links), the iteration
/// depends on the cuts through compute alone: the search then keeps every stage within
/// the exact min-max bound and uses the estimate only to choose among such splits.
///
/// The planner's later rounds pass the placement its mapper chose (PlanContext::
/// placement); before that, stages are assumed on the cluster's devices in order, one
/// pipeline after another. Option `search = false` returns step 1 alone.

#include "../unit_costs.hpp"
#include "balanced_split.hpp"
#include "iteration_search.hpp"
#include "send_aware_split.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/schedule_builders.hpp>

#include <cmath>
#include <optional>

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

/// Where the stages run: the mapper's placement when the planner passed one, else the
/// cluster's devices in order, pipeline after pipeline (what a first round can know).
std::vector<std::vector<DeviceId>> placement(const PlanContext& c) {
  const bool given = c.placement.size() == c.pipelines &&
                     std::all_of(c.placement.begin(), c.placement.end(), [&](const std::vector<DeviceId>& p) {
                       return p.size() == c.stages &&
                              std::all_of(p.begin(), p.end(), [&](DeviceId d) { return d < c.cluster.devices.size(); });
                     });
  if (given) return c.placement;
  std::vector<std::vector<DeviceId>> out(c.pipelines, std::vector<DeviceId>(c.stages));
  for (std::size_t p = 0; p < c.pipelines; ++p)
    for (std::size_t s = 0; s < c.stages; ++s)
      out[p][s] = (p * c.stages + s) % c.cluster.devices.size();
  return out;
}

class AutopipePartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {"search"}));
    auto search = choice_option(context.options, "search", "true", {"true", "false"});
    ACTORPIPE_TRY(search);
    const UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context));
    ACTORPIPE_TRY(
        partitioning::check_stage_count(costs, context, context.sub_blocks ? "blocks and sub-blocks" : "blocks"));
    const std::size_t S = context.stages;

    const Schedule schedule = context.scheduler == "gpipe" ? gpipe_schedule(S, context.micro_batch_sizes)
                                                           : one_f_one_b_schedule(S, context.micro_batch_sizes);
    IterationModel model(context.cluster,
                         {placement(context), schedule, context.action_overhead_ms, context.optimizer_factor});
    std::vector<double> speeds(S);
    std::vector<std::uint64_t> memory(S);
    for (std::size_t s = 0; s < S; ++s)
      speeds[s] = model.stage_speed(s), memory[s] = model.stage_memory(s);

    // 1. The exact min-max compute split; when memory rules every split out, time alone
    //    is balanced and the planner reports the overflow.
    std::optional<autopipe::BalancedSplit> balanced(std::in_place, context, costs, speeds, memory);
    double bound = balanced->min_max_bound();
    if (std::isinf(bound)) {
      memory.clear();
      balanced.emplace(context, costs, speeds, memory);
      bound = balanced->min_max_bound();
    }
    std::vector<std::size_t> best = balanced->spread(bound);
    balanced->quiet_cuts(best, bound);
    context.report(0.2);
    if (*search == "false") return costs.to_partition(best);

    autopipe::IterationSearch descent(context, costs, model, memory, 64 + 16 * S);
    double best_time = descent.time(best);
    bool sends_free = true;
    for (std::size_t k = 0; k + 1 < S; ++k)
      sends_free = sends_free && model.cut_ms_per_byte(k) == 0 && model.cut_latency_ms(k) == 0;
    if (sends_free) {
      descent.refine(best, best_time, bound);
      return costs.to_partition(best);
    }

    // 2. Min-max splits that also count each stage's sends.
    auto slowness = [&](std::size_t s) { return 1.0 / speeds[s]; };
    auto fits = [&](std::size_t s, std::size_t i, std::size_t j) { return descent.fits(s, i, j); };
    auto send = [&](std::size_t s, std::size_t i) {
      return costs.boundary_bytes(i) * model.cut_ms_per_byte(s - 1) + model.cut_latency_ms(s - 1);
    };
    autopipe::SendAwareSplit split(costs, S, slowness, fits, send);
    const std::vector<std::size_t> balanced_cuts = best;
    auto consider = [&](std::vector<std::size_t> candidate) {
      if (candidate.empty()) return;
      if (const double t = descent.time(candidate); t < best_time) best_time = t, best = std::move(candidate);
    };
    for (double weight : {1.0, 0.5}) {
      std::vector<std::size_t> candidate = split.solve(balanced_cuts, bound, weight);
      consider(split.spread(split.largest(candidate, weight), weight));
      consider(std::move(candidate));
    }
    context.report(0.5);

    // 3. Descent on the estimate from the best of them.
    descent.refine(best, best_time, std::numeric_limits<double>::infinity());
    context.report(1.0);
    return costs.to_partition(best);
  }
};

} // namespace

ACTORPIPE_PLUGIN(AutopipePartitioner, "autopipe", "2.0.0",
                 "AutoPipe-H: sub-block cuts for the shortest estimated iteration on the placed devices and links")
