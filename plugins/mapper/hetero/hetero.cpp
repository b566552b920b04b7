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
/// cluster's links (contention included), with stage work rebalanced to the layout's
/// stage speeds as the planner's second round will; the faster wins. Option `layout`
/// fixes it.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include <algorithm>
#include <functional>
#include <limits>
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

enum class Layout { stage_major, pipeline_major };

/// Lays the ranked devices out by stage (a stage's replicas consecutive) or by
/// pipeline (a pipeline's stages consecutive).
Mapping lay_out(const std::vector<DeviceId>& ranked, std::size_t stages, std::size_t pipelines, Layout layout) {
  Mapping mapping;
  mapping.devices.assign(pipelines, std::vector<DeviceId>(stages));
  for (std::size_t p = 0; p < pipelines; ++p)
    for (std::size_t s = 0; s < stages; ++s)
      mapping.devices[p][s] = ranked[layout == Layout::stage_major ? s * pipelines + p : p * stages + s];
  return mapping;
}

/// Each stage's speed under a mapping: its slowest replica's, which its peers wait for.
std::vector<double> stage_speeds(const ClusterSpec& cluster, const Mapping& mapping) {
  std::vector<double> speeds(mapping.devices.front().size(), std::numeric_limits<double>::infinity());
  for (const auto& pipeline : mapping.devices)
    for (std::size_t s = 0; s < speeds.size(); ++s)
      speeds[s] = std::min(speeds[s], cluster.devices[pipeline[s]].speed);
  return speeds;
}

/// The partition a speed-aware partitioner would move towards on these stage speeds:
/// cuts where each stage's share of the compute matches its share of the speed. A
/// layout whose stages differ in speed is priced with it, since the planner's second
/// round rebalances for the devices chosen; pricing it on a speed-blind partition would
/// always favour layouts that give every stage the same kind of device.
Partition speed_balanced(const PlanContext& context, const Partition& partition, const std::vector<double>& speeds) {
  if (std::adjacent_find(speeds.begin(), speeds.end(), std::not_equal_to<>()) == speeds.end()) return partition;
  const std::vector<Unit> units = context.profile.units(context.sub_blocks);
  std::vector<double> done(units.size() + 1, 0.0);
  for (std::size_t u = 0; u < units.size(); ++u)
    done[u + 1] = done[u] + units[u].forward_ms + units[u].backward_ms;
  const double speed_total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  Partition balanced;
  balanced.cuts.push_back(partition.cuts.front());
  std::size_t u = 0;
  double share = 0;
  for (std::size_t s = 0; s + 1 < speeds.size(); ++s) {
    share += speeds[s] / speed_total;
    // At least one unit per stage, and one left for each stage after this one.
    const std::size_t last = units.size() - (speeds.size() - s - 1);
    std::size_t end = u + 1;
    while (end < last && done[end + 1] <= share * done.back())
      ++end;
    if (end < last && done[end + 1] - share * done.back() < share * done.back() - done[end]) ++end;
    balanced.cuts.push_back(units[end].begin);
    u = end;
  }
  balanced.cuts.push_back(partition.cuts.back());
  return balanced;
}

/// Predicted samples/s of a mapping: one simulated iteration.
Result<double> price(const PlanContext& context, const Partition& partition, const Mapping& mapping) {
  Plan plan;
  plan.pipelines = context.pipelines;
  for (std::size_t s = 0; s < context.stages; ++s)
    plan.stages.push_back({partition.cuts[s], partition.cuts[s + 1], {}});
  plan.devices = mapping.devices;
  plan.batch_size = context.batch_size;
  plan.schedule = context.scheduler == "gpipe" ? gpipe_schedule(context.stages, context.micro_batch_sizes)
                                               : one_f_one_b_schedule(context.stages, context.micro_batch_sizes);
  SimulationOptions options;
  options.iterations = 1;
  options.action_overhead_ms = context.action_overhead_ms;
  options.optimizer_factor = context.optimizer_factor;
  auto report = simulate(plan, context.profile, context.cluster, options);
  ACTORPIPE_TRY(report);
  return report->samples_per_s;
}

class HeteroMapper : public Mapper {
public:
  Result<Mapping> map(const PlanContext& context, const Partition& partition) override {
    ACTORPIPE_TRY(check_options(context.options, {"layout"}));
    auto layout = choice_option(context.options, "layout", "auto", {"auto", "stage-major", "pipeline-major"});
    ACTORPIPE_TRY(layout);
    const std::size_t needed = context.pipelines * context.stages;
    if (needed > context.cluster.devices.size())
      return Error::bad_input(std::to_string(context.pipelines) + " pipelines × " + std::to_string(context.stages) +
                              " stages need " + std::to_string(needed) + " devices; cluster '" + context.cluster.name +
                              "' has " + std::to_string(context.cluster.devices.size()));
    const std::vector<DeviceId> ranked = ranked_devices(context.cluster);
    if (*layout == "stage-major") return lay_out(ranked, context.stages, context.pipelines, Layout::stage_major);
    if (*layout == "pipeline-major" || context.pipelines == 1 || context.stages == 1)
      return lay_out(ranked, context.stages, context.pipelines, Layout::pipeline_major);

    Mapping by_stage = lay_out(ranked, context.stages, context.pipelines, Layout::stage_major);
    Mapping by_pipeline = lay_out(ranked, context.stages, context.pipelines, Layout::pipeline_major);
    auto stage_speed =
        price(context, speed_balanced(context, partition, stage_speeds(context.cluster, by_stage)), by_stage);
    ACTORPIPE_TRY(stage_speed);
    auto pipeline_speed =
        price(context, speed_balanced(context, partition, stage_speeds(context.cluster, by_pipeline)), by_pipeline);
    ACTORPIPE_TRY(pipeline_speed);
    return *pipeline_speed > *stage_speed ? by_pipeline : by_stage;
  }
};

} // namespace

ACTORPIPE_PLUGIN(HeteroMapper, "hetero", "1.0.0",
                 "fastest servers first; stage- or pipeline-major, whichever the simulated links favour")
