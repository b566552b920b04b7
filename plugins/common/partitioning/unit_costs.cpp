/// The partitioners' shared checks and the cluster's bandwidths as the baselines see
/// them.

#include "common/partitioning/unit_costs.hpp"

namespace actorpipe::partitioning {

Status check_stage_count(const UnitCosts& costs, const PlanContext& context, const char* granularity) {
  if (context.stages == 0 || context.stages > costs.size())
    return Error::bad_input("cannot cut " + std::to_string(costs.size()) + " " + granularity + " into " +
                            std::to_string(context.stages) + " stages");
  return Ok{};
}

Bandwidths cluster_bandwidths(const ClusterSpec& cluster) {
  const Server& server = cluster.servers.front();
  Bandwidths b;
  b.intra_server = server.pcie_switches.front().bandwidth;
  b.inter_server = std::min(server.nic_bandwidth, cluster.network.bandwidth);
  b.devices_per_server = std::max<std::size_t>(1, cluster.devices_of(0).size());
  return b;
}

} // namespace actorpipe::partitioning
