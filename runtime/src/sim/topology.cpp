#include "sim/topology.hpp"

namespace actorpipe::sim {

namespace {

double per_ms(double bytes_per_s) { return bytes_per_s / 1000.0; }

} // namespace

Topology::Topology(const ClusterSpec& cluster) : cluster_(cluster) {
  const std::size_t devices = cluster.devices.size();
  // Device links run at their switch's (PCIe x16) bandwidth.
  for (const Device& d : cluster.devices) {
    const double link = per_ms(cluster.servers[d.server].pcie_switches[d.pcie_switch].bandwidth);
    bytes_per_ms_.insert(bytes_per_ms_.end(), {link, link});
  }
  nvlink_base_ = static_cast<LaneId>(bytes_per_ms_.size());
  for (const Device& d : cluster.devices) {
    const double link = per_ms(cluster.servers[d.server].nvlink_bandwidth);
    bytes_per_ms_.insert(bytes_per_ms_.end(), {link, link});
  }
  lane_owner_.resize(bytes_per_ms_.size());
  for (std::size_t i = 0; i < 2 * devices; ++i)
    lane_owner_[i] = lane_owner_[nvlink_base_ + i] = static_cast<std::uint32_t>(i / 2);

  for (std::size_t s = 0; s < cluster.servers.size(); ++s) {
    const Server& server = cluster.servers[s];
    ServerLanes lanes;
    auto add = [&](double bandwidth) {
      bytes_per_ms_.insert(bytes_per_ms_.end(), {per_ms(bandwidth), per_ms(bandwidth)});
      lane_owner_.insert(lane_owner_.end(), {static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(s)});
    };
    lanes.switches = static_cast<LaneId>(bytes_per_ms_.size());
    for (const PcieSwitch& sw : server.pcie_switches)
      add(sw.bandwidth);
    lanes.bridges = static_cast<LaneId>(bytes_per_ms_.size());
    for (const HostBridge& bridge : server.host_bridges)
      add(bridge.bandwidth);
    lanes.inter_bridge = static_cast<LaneId>(bytes_per_ms_.size());
    add(server.host_bridges.size() > 1 ? server.inter_bridge_bandwidth : 1e30);
    lanes.nics = static_cast<LaneId>(bytes_per_ms_.size());
    for (std::size_t n = 0; n < server.nics; ++n)
      add(server.nic_bandwidth);
    servers_.push_back(lanes);
  }
}

std::string Topology::lane_name(LaneId lane) const {
  const std::string direction_pair[2][2] = {{" out", " in"}, {" up", " down"}};
  if (lane < nvlink_base_) return cluster_.devices[lane_owner_[lane]].name + direction_pair[0][lane % 2];
  if (lane < 2 * nvlink_base_)
    return cluster_.devices[lane_owner_[lane]].name + " nvlink" + direction_pair[0][lane % 2];
  const std::size_t s = lane_owner_[lane];
  const ServerLanes& base = servers_[s];
  const std::string& server = cluster_.servers[s].name;
  if (lane < base.bridges)
    return server + "/switch" + std::to_string((lane - base.switches) / 2) +
           direction_pair[1][(lane - base.switches) % 2];
  if (lane < base.inter_bridge)
    return server + "/bridge" + std::to_string((lane - base.bridges) / 2) +
           direction_pair[1][(lane - base.bridges) % 2];
  if (lane < base.nics) return server + "/inter-socket" + ((lane - base.inter_bridge) % 2 ? " down" : " up");
  return server + "/nic" + std::to_string((lane - base.nics) / 2) + direction_pair[0][(lane - base.nics) % 2];
}

void Topology::towards_nic(Route& route, DeviceId d, bool in) const {
  const Device& device = cluster_.devices[d];
  const Server& server = cluster_.servers[device.server];
  const ServerLanes& base = servers_[device.server];
  const std::size_t sw = device.pcie_switch;
  const std::size_t bridge = server.pcie_switches[sw].host_bridge;
  const std::size_t nic = sw % server.nics;
  const std::size_t nic_bridge = nic % server.host_bridges.size();
  const LaneId lane_in = in ? 1 : 0;
  auto add = [&](LaneId lane) { route.add(lane, bytes_per_ms_[lane]); };
  add(device_link(d, in));
  add(base.switches + static_cast<LaneId>(2 * sw) + lane_in);
  add(base.bridges + static_cast<LaneId>(2 * bridge) + lane_in);
  if (nic_bridge != bridge) add(base.inter_bridge + static_cast<LaneId>((bridge < nic_bridge) != in ? 0 : 1));
  add(base.nics + static_cast<LaneId>(2 * nic) + lane_in);
}

Route Topology::route(DeviceId from, DeviceId to) const {
  Route route;
  if (from == to) return route;
  const Device& a = cluster_.devices[from];
  const Device& b = cluster_.devices[to];
  auto add = [&](LaneId lane) { route.add(lane, bytes_per_ms_[lane]); };
  if (a.server != b.server) {
    towards_nic(route, from, false);
    towards_nic(route, to, true);
    route.bytes_per_ms = std::min(route.bytes_per_ms, per_ms(cluster_.network.bandwidth));
    route.latency_ms = cluster_.network.latency * 1000.0;
    return route;
  }
  if (a.nvlink_group >= 0 && a.nvlink_group == b.nvlink_group) {
    add(nvlink_port(from, false));
    add(nvlink_port(to, true));
    return route;
  }
  add(device_link(from, false));
  if (a.pcie_switch != b.pcie_switch) {
    const Server& server = cluster_.servers[a.server];
    const ServerLanes& base = servers_[a.server];
    const std::size_t bridge_a = server.pcie_switches[a.pcie_switch].host_bridge;
    const std::size_t bridge_b = server.pcie_switches[b.pcie_switch].host_bridge;
    add(base.switches + static_cast<LaneId>(2 * a.pcie_switch));
    if (bridge_a != bridge_b) {
      add(base.bridges + static_cast<LaneId>(2 * bridge_a));
      add(base.inter_bridge + (bridge_a < bridge_b ? 0u : 1u));
      add(base.bridges + static_cast<LaneId>(2 * bridge_b) + 1);
    }
    add(base.switches + static_cast<LaneId>(2 * b.pcie_switch) + 1);
  }
  add(device_link(to, true));
  return route;
}

} // namespace actorpipe::sim
