/// Partitioner `autopipe` (AutoPipe-H): cuts at sub-block granularity for the shortest
/// iteration on the devices and links the stages are placed on (cut_search.hpp says
/// how).
///
/// The planner's later rounds pass the placement its mapper chose (PlanContext::
/// placement); before that, stages are assumed on the cluster's devices in order, one
/// pipeline after another, and mapper `hetero` prices its layouts with the cuts this
/// search gives each of them. Option `search = false` returns the exact min-max compute
/// split alone.

#include "common/partitioning/unit_costs.hpp"
#include "common/autopipe/cut_search.hpp"

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

/// Where the stages run: the mapper's placement when the planner passed one, else the
/// cluster's devices in order, pipeline after pipeline (what a first round can know),
/// a device's chunks on it.
std::vector<std::vector<DeviceId>> placement(const PlanContext& c) {
  if (autopipe::placement_given(c)) return c.placement;
  const Schedule layout = autopipe::chunk_layout(c);
  const std::size_t devices = layout.stages.size();
  std::vector<std::vector<DeviceId>> out(c.pipelines, std::vector<DeviceId>(c.stages));
  for (std::size_t p = 0; p < c.pipelines; ++p)
    for (std::size_t s = 0; s < c.stages; ++s)
      out[p][s] = (p * devices + layout.place_of(s).stage) % c.cluster.devices.size();
  return out;
}

class AutopipePartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {"search"}));
    auto search = choice_option(context.options, "search", "true", {"true", "false"});
    ACTORPIPE_TRY(search);
    const UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context),
                          context.recompute);
    ACTORPIPE_TRY(
        partitioning::check_stage_count(costs, context, context.sub_blocks ? "blocks and sub-blocks" : "blocks"));
    IterationModel model = autopipe::iteration_model(context, placement(context));
    Partition partition = costs.to_partition(autopipe::search_cuts(context, costs, model, *search == "true"));
    partition.memory_bound = autopipe::memory_binds(context, costs, model);
    return partition;
  }
};

} // namespace

ACTORPIPE_PLUGIN(AutopipePartitioner, "autopipe", "2.0.0",
                 "AutoPipe-H: sub-block cuts for the shortest estimated iteration on the placed devices and links")
