/// Mapper `hetero` (AutoPipe-H): places stages and replicas knowing that servers differ
/// and that PCIe switches, host bridges and NICs are shared.
///
/// Devices are ranked fastest server first, and within a server by PCIe switch, so
/// that a job smaller than the cluster lands on its fastest devices and neighbours in
/// the ranking share a switch. Two layouts are laid over the ranking:
///   stage-major    the replicas of a stage take consecutive devices: its all-reduce
///                  stays under one switch or server, each stage has one device kind
///                  (so a speed-aware partitioner can give faster stages more work),
///                  and only the cuts between stages cross servers;
///   pipeline-major each pipeline takes consecutive devices: neighbours share a switch
///                  or server, and the all-reduces cross servers instead.
/// Each layout is priced by simulating one iteration of the job's schedule over the
/// cluster's links (contention included); the faster wins. Option `layout` fixes it.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include <algorithm>
#include <numeric>

namespace {

using namespace actorpipe;

/// Devices fastest server first, then by PCIe switch.
std::vector<DeviceId> ranked_devices(const ClusterSpec& cluster) {
  std::vector<double> server_speed(cluster.servers.size(), 0.0);
  std::vector<std::size_t> server_devices(cluster.servers.size(), 0);
  for (const Device& d : cluster.devices) {
    server_speed[d.server] += d.speed;
    ++server_devices[d.server];
  }
  for (std::size_t s = 0; s < server_speed.size(); ++s)
    if (server_devices[s]) server_speed[s] /= static_cast<double>(server_devices[s]);
  std::vector<DeviceId> ranked(cluster.devices.size());
  std::iota(ranked.begin(), ranked.end(), DeviceId{0});
  std::stable_sort(ranked.begin(), ranked.end(), [&](DeviceId a, DeviceId b) {
    const Device& x = cluster.devices[a];
    const Device& y = cluster.devices[b];
    if (server_speed[x.server] != server_speed[y.server]) return server_speed[x.server] > server_speed[y.server];
    if (x.server != y.server) return x.server < y.server;
    if (x.pcie_switch != y.pcie_switch) return x.pcie_switch < y.pcie_switch;
    return x.speed > y.speed;
  });
  return ranked;
}

Mapping stage_major(const std::vector<DeviceId>& ranked, std::size_t stages, std::size_t pipelines) {
  Mapping mapping;
  mapping.devices.assign(pipelines, std::vector<DeviceId>(stages));
  for (std::size_t s = 0; s < stages; ++s)
    for (std::size_t p = 0; p < pipelines; ++p) mapping.devices[p][s] = ranked[s * pipelines + p];
  return mapping;
}

Mapping pipeline_major(const std::vector<DeviceId>& ranked, std::size_t stages, std::size_t pipelines) {
  Mapping mapping;
  mapping.devices.assign(pipelines, std::vector<DeviceId>(stages));
  for (std::size_t p = 0; p < pipelines; ++p)
    for (std::size_t s = 0; s < stages; ++s) mapping.devices[p][s] = ranked[p * stages + s];
  return mapping;
}

/// Predicted samples/s of a mapping: one simulated iteration.
Result<double> price(const PlanContext& context, const Partition& partition, const Mapping& mapping) {
  Plan plan;
  plan.pipelines = context.pipelines;
  for (std::size_t s = 0; s < context.stages; ++s) plan.stages.push_back({partition.cuts[s], partition.cuts[s + 1], {}});
  plan.devices = mapping.devices;
  plan.batch_size = context.batch_size;
  plan.micro_batch_sizes = context.micro_batch_sizes;
  plan.schedule = context.scheduler == "gpipe" ? gpipe_schedule(context.stages, context.micro_batch_sizes)
                                               : one_f_one_b_schedule(context.stages, context.micro_batch_sizes);
  SimulationOptions options;
  options.iterations = 1;
  options.action_overhead_ms = context.action_overhead_ms;
  options.optimizer_factor = context.optimizer_factor;
  auto report = simulate(plan, context.profile, context.cluster, options);
  if (!report) return std::move(report).error();
  return report->samples_per_s;
}

class HeteroMapper : public Mapper {
public:
  Result<Mapping> map(const PlanContext& context, const Partition& partition) override {
    if (auto s = check_options(context.options, {"layout"}); !s) return std::move(s).error();
    auto layout = choice_option(context.options, "layout", "auto", {"auto", "stage-major", "pipeline-major"});
    if (!layout) return std::move(layout).error();
    const std::size_t needed = context.pipelines * context.stages;
    if (needed > context.cluster.devices.size())
      return Error::bad_input(std::to_string(context.pipelines) + " pipelines × " + std::to_string(context.stages) +
                              " stages need " + std::to_string(needed) + " devices; cluster '" + context.cluster.name +
                              "' has " + std::to_string(context.cluster.devices.size()));
    const std::vector<DeviceId> ranked = ranked_devices(context.cluster);
    if (*layout == "stage-major") return stage_major(ranked, context.stages, context.pipelines);
    if (*layout == "pipeline-major" || context.pipelines == 1 || context.stages == 1)
      return pipeline_major(ranked, context.stages, context.pipelines);

    Mapping by_stage = stage_major(ranked, context.stages, context.pipelines);
    Mapping by_pipeline = pipeline_major(ranked, context.stages, context.pipelines);
    auto stage_speed = price(context, partition, by_stage);
    if (!stage_speed) return std::move(stage_speed).error();
    auto pipeline_speed = price(context, partition, by_pipeline);
    if (!pipeline_speed) return std::move(pipeline_speed).error();
    return *pipeline_speed > *stage_speed ? by_pipeline : by_stage;
  }
};

} // namespace

ACTORPIPE_PLUGIN(HeteroMapper, "hetero", "1.0.0",
                 "fastest servers first; stage- or pipeline-major, whichever the simulated links favour")
