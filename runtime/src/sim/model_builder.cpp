#include "sim/model_builder.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

namespace actorpipe::sim {

Group make_group(const Topology& topology, const ClusterSpec& cluster, std::vector<std::uint32_t> instances,
                 const std::vector<DeviceId>& devices, double bytes) {
  Group group;
  group.bytes = bytes;
  group.ring = devices.size();
  std::vector<std::size_t> order(devices.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Device& x = cluster.devices[devices[a]];
    const Device& y = cluster.devices[devices[b]];
    return std::tie(x.server, x.pcie_switch, devices[a]) < std::tie(y.server, y.pcie_switch, devices[b]);
  });
  group.instances = std::move(instances);
  group.bytes_per_ms = std::numeric_limits<double>::infinity();
  if (order.size() < 2) return group;
  std::vector<LaneId> crossed; ///< every ring step's lanes; sorted, a lane's uses are its run
  for (std::size_t j = 0; j < order.size(); ++j) {
    const Route route = topology.route(devices[order[j]], devices[order[(j + 1) % order.size()]]);
    crossed.insert(crossed.end(), route.lanes.begin(), route.lanes.begin() + route.count);
    group.latency_ms = std::max(group.latency_ms, route.latency_ms);
    group.bytes_per_ms = std::min(group.bytes_per_ms, route.bytes_per_ms);
  }
  std::sort(crossed.begin(), crossed.end());
  for (std::size_t k = 0; k < crossed.size();) {
    const LaneId lane = crossed[k];
    int count = 0;
    for (; k < crossed.size() && crossed[k] == lane; ++k)
      ++count;
    group.lanes.push_back(lane);
    group.lane_uses.push_back(count);
    group.bytes_per_ms = std::min(group.bytes_per_ms, topology.bytes_per_ms(lane) / count);
  }
  return group;
}

double optimizer_step_ms(double parameter_bytes, const Device& device, double optimizer_factor) {
  // The step reads parameters and gradients and reads and writes its state.
  return parameter_bytes * (1.0 + 2.0 * optimizer_factor) / device.memory_bandwidth * 1000.0;
}

void set_stage_costs(Instance& instance, const StageFigures& f, const Device& device, double optimizer_factor) {
  instance.forward_ms_per_sample = f.forward_ms / device.speed;
  instance.backward_ms_per_sample = f.backward_ms / device.speed;
  instance.forward_fixed_ms = f.forward_fixed_ms / device.speed;
  instance.backward_fixed_ms = f.backward_fixed_ms / device.speed;
  instance.input_gradient_share = f.input_gradient_share;
  instance.optimizer_ms = optimizer_step_ms(static_cast<double>(f.parameter_bytes), device, optimizer_factor);
}

} // namespace actorpipe::sim
