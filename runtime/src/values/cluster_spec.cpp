/// ClusterSpec's checks: servers, links and devices that a cluster file or a program
/// gave, each fault named.

#include <actorpipe/cluster_spec.hpp>

#include <cmath>
#include <set>

namespace actorpipe {

namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }
/// A bandwidth may be unlimited (infinite): a link that takes no time.
bool positive_bandwidth(double x) { return x > 0; }

} // namespace

Status ClusterSpec::validate() const {
  const std::string cluster = "cluster '" + name + "': ";
  if (servers.empty()) return Error::bad_input(cluster + "has no servers");
  if (devices.empty()) return Error::bad_input(cluster + "has no devices");
  if (!positive_bandwidth(network.bandwidth)) return Error::bad_input(cluster + "network bandwidth must be positive");
  if (!std::isfinite(network.latency) || network.latency < 0)
    return Error::bad_input(cluster + "network latency must not be negative");

  std::set<std::string> server_names;
  for (const Server& server : servers) {
    const std::string where = cluster + "server '" + server.name + "': ";
    if (!server_names.insert(server.name).second) return Error::bad_input(where + "another server has the same name");
    if (server.nics == 0) return Error::bad_input(where + "needs at least one NIC");
    if (!positive_bandwidth(server.nic_bandwidth)) return Error::bad_input(where + "NIC bandwidth must be positive");
    if (server.pcie_switches.empty()) return Error::bad_input(where + "has no PCIe switch");
    if (server.host_bridges.empty()) return Error::bad_input(where + "has no host bridge");
    if (server.host_bridges.size() > 1 && !positive_bandwidth(server.inter_bridge_bandwidth))
      return Error::bad_input(where + "inter-bridge bandwidth must be positive");
    if (!(server.nvlink_bandwidth >= 0)) return Error::bad_input(where + "NVLink bandwidth must not be negative");
    for (std::size_t i = 0; i < server.pcie_switches.size(); ++i) {
      const PcieSwitch& sw = server.pcie_switches[i];
      if (!positive_bandwidth(sw.bandwidth))
        return Error::bad_input(where + "PCIe switch " + std::to_string(i) + ": bandwidth must be positive");
      if (sw.host_bridge >= server.host_bridges.size())
        return Error::bad_input(where + "PCIe switch " + std::to_string(i) + ": host bridge " +
                                std::to_string(sw.host_bridge) + " does not exist");
    }
    for (std::size_t i = 0; i < server.host_bridges.size(); ++i)
      if (!positive_bandwidth(server.host_bridges[i].bandwidth))
        return Error::bad_input(where + "host bridge " + std::to_string(i) + ": bandwidth must be positive");
  }

  std::set<std::string> device_names;
  std::size_t previous_server = 0;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const Device& device = devices[d];
    const std::string where = cluster + "device " + std::to_string(d) + " '" + device.name + "': ";
    if (!device_names.insert(device.name).second) return Error::bad_input(where + "another device has the same name");
    if (device.server >= servers.size())
      return Error::bad_input(where + "server " + std::to_string(device.server) + " does not exist");
    if (device.server < previous_server) return Error::bad_input(where + "devices must be listed server by server");
    previous_server = device.server;
    if (device.pcie_switch >= servers[device.server].pcie_switches.size())
      return Error::bad_input(where + "PCIe switch " + std::to_string(device.pcie_switch) + " does not exist");
    if (!positive(device.speed)) return Error::bad_input(where + "speed must be positive");
    if (device.memory_bytes == 0) return Error::bad_input(where + "memory must be positive");
    if (!positive(device.memory_bandwidth)) return Error::bad_input(where + "memory bandwidth must be positive");
    if (device.nvlink_group >= 0 && servers[device.server].nvlink_bandwidth <= 0)
      return Error::bad_input(where + "is in an NVLink group but its server has no NVLink bandwidth");
  }
  return Ok{};
}

std::vector<DeviceId> ClusterSpec::devices_of(std::size_t server) const {
  std::vector<DeviceId> ids;
  for (DeviceId d = 0; d < devices.size(); ++d)
    if (devices[d].server == server) ids.push_back(d);
  return ids;
}

} // namespace actorpipe
