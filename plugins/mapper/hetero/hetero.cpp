/// Mapper `hetero` (AutoPipe-H): places stages and replicas knowing that servers differ
/// and that PCIe switches, host bridges and NICs are shared.
///
/// Devices are ranked fastest server first, and within a server by PCIe switch, so
/// that a job smaller than the cluster lands on its fastest devices and neighbours in
/// the ranking share a switch. Two layouts are laid over the ranking:
///   stage-major    the replicas of a stage take consecutive devices (a server's worth
///                  of pipelines at a time): its all-reduce stays under one switch or
///                  server as far as it can, each stage has one device kind (so a
///                  speed-aware partitioner can give faster stages more work), and only
///                  the cuts between stages cross servers;
///   pipeline-major each pipeline takes consecutive devices: neighbours share a switch
///                  or server, and the all-reduces cross servers instead.
/// Each layout is priced by the planner's estimate of one iteration over the cluster's
/// links (contention included), with the cuts AutoPipe-H's search gives that layout
/// when they beat the partition given, since a placement-aware partitioner re-cuts for
/// the layout in the planner's next round; the faster wins. Option `layout` fixes it.

#include "common/cut_search.hpp"
#include "common/iteration_search.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/plugin.hpp>

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
/// pipeline (a pipeline's stages consecutive). Stage-major goes pod by pod: pipelines
/// are taken `pod` at a time (a server's worth), and each pod lays its stages out
/// stage-major over its own devices, so that no stage's replicas straddle two servers
/// whose NICs the neighbouring stages would then share.
Mapping lay_out(const std::vector<DeviceId>& ranked, std::size_t stages, std::size_t pipelines, Layout layout,
                std::size_t pod) {
  Mapping mapping;
  mapping.devices.assign(pipelines, std::vector<DeviceId>(stages));
  for (std::size_t p = 0; p < pipelines; ++p)
    for (std::size_t s = 0; s < stages; ++s) {
      if (layout == Layout::pipeline_major) {
        mapping.devices[p][s] = ranked[p * stages + s];
        continue;
      }
      const std::size_t first = p / pod * pod; // the pod's first pipeline
      const std::size_t size = std::min(pod, pipelines - first);
      mapping.devices[p][s] = ranked[first * stages + s * size + (p - first)];
    }
  return mapping;
}

/// What a layout is worth: the planner's estimate of one iteration on it, with the
/// better of the partition given and the cuts AutoPipe-H's search finds for the layout,
/// which a placement-aware partitioner gives it in the planner's next round. Pricing
/// every layout on the given cuts alone would favour the layout they were made for.
double price(const PlanContext& context, const Partition& partition, const Mapping& mapping) {
  const partitioning::UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context),
                                      context.recompute);
  IterationModel model = autopipe::iteration_model(context, mapping.devices);
  autopipe::IterationSearch judge(context, costs, model, partitioning::MemoryFit(costs, context, {}), 2);
  const double given = judge.time(costs.to_boundaries(partition));
  return std::min(given, judge.time(autopipe::search_cuts(context, costs, model, true, false)));
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
    const std::size_t pod =
        std::max<std::size_t>(1, context.cluster.devices_of(context.cluster.devices[ranked.front()].server).size());
    auto layout_of = [&](Layout l) { return lay_out(ranked, context.stages, context.pipelines, l, pod); };
    if (*layout == "stage-major") return layout_of(Layout::stage_major);
    if (*layout == "pipeline-major" || context.pipelines == 1 || context.stages == 1)
      return layout_of(Layout::pipeline_major);

    Mapping by_stage = layout_of(Layout::stage_major);
    Mapping by_pipeline = layout_of(Layout::pipeline_major);
    return price(context, partition, by_pipeline) < price(context, partition, by_stage) ? by_pipeline : by_stage;
  }
};

} // namespace

ACTORPIPE_PLUGIN(HeteroMapper, "hetero", "1.0.0",
                 "fastest servers first; stage- or pipeline-major, whichever the simulated links favour")
