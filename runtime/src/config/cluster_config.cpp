/// The cluster format (docs/config.md, "[cluster]"): servers are described once with a
/// `count`, their devices as groups, and their wiring by a few numbers from which the
/// PCIe switches, host bridges and NVLink groups of ClusterSpec are laid out.

#include "config/cluster_config.hpp"

#include "config/toml_reader.hpp"

#include <filesystem>

namespace actorpipe::config {

namespace {

/// The wiring of one server, as written in the file.
struct ServerOptions {
  std::string name;
  std::uint32_t count = 1;
  std::vector<std::string> hosts; ///< `host`, or `hosts`: one per server of the count; empty: any
  // [servers.pcie]
  std::uint32_t devices_per_switch = 0;  ///< 0: all devices behind one switch
  double switch_bandwidth = 16e9;        ///< PCIe 3.0 x16
  std::uint32_t switches_per_bridge = 0; ///< 0: all switches under one host bridge
  double bridge_bandwidth = 0;           ///< 0: same as switch_bandwidth
  double inter_bridge_bandwidth = 20e9;
  // [servers.nvlink]
  double nvlink_bandwidth = 0;
  std::uint32_t devices_per_nvlink_group = 0; ///< 0: all devices
  // [servers.nic]
  std::uint32_t nics = 1;
  double nic_bandwidth = 0; ///< 0: the network's bandwidth
};

struct DeviceGroup {
  std::string kind = "gpu";
  std::uint32_t count = 1;
  double speed = 1.0;
  std::uint64_t memory = 0;
  double memory_bandwidth = 500e9;
};

Status read_server(const toml::table& table, const std::string& path, ServerOptions& server,
                   std::vector<DeviceGroup>& groups) {
  TableReader reader(table, path);
  if (auto s = reader.require("name"); !s) return s;
  if (auto s = reader.string("name", server.name); !s) return s;
  if (auto s = reader.integer("count", server.count, 1u, 100000u); !s) return s;
  // One machine's host name for a server, one per server for a counted entry.
  if (const toml::node* one = reader.node("host")) {
    std::string host;
    if (auto s = reader.string("host", host); !s) return s;
    if (server.count != 1)
      return error_at(*one, reader.key_path("host"),
                      "names one machine for " + std::to_string(server.count) + " servers (count): give hosts = [...]");
    server.hosts.push_back(host);
  }
  if (const toml::node* many = reader.node("hosts")) {
    if (auto s = reader.string_list("hosts", server.hosts); !s) return s;
    if (server.hosts.size() != server.count)
      return error_at(*many, reader.key_path("hosts"),
                      std::to_string(server.hosts.size()) + " host names for " + std::to_string(server.count) +
                          " servers (count)");
  }

  const auto pcie = [&](TableReader& r) -> Status {
    if (auto s = r.integer("devices_per_switch", server.devices_per_switch, 1u, 4096u); !s) return s;
    if (auto s = r.bandwidth("switch_bandwidth", server.switch_bandwidth); !s) return s;
    if (auto s = r.integer("switches_per_bridge", server.switches_per_bridge, 1u, 4096u); !s) return s;
    if (auto s = r.bandwidth("bridge_bandwidth", server.bridge_bandwidth); !s) return s;
    return r.bandwidth("inter_bridge_bandwidth", server.inter_bridge_bandwidth);
  };
  const auto nvlink = [&](TableReader& r) -> Status {
    if (auto s = r.require("bandwidth"); !s) return s;
    if (auto s = r.bandwidth("bandwidth", server.nvlink_bandwidth); !s) return s;
    return r.integer("devices_per_group", server.devices_per_nvlink_group, 1u, 4096u);
  };
  const auto nic = [&](TableReader& r) -> Status {
    if (auto s = r.integer("count", server.nics, 1u, 64u); !s) return s;
    return r.bandwidth("bandwidth", server.nic_bandwidth);
  };
  if (auto s = reader.optional_table("pcie", pcie); !s) return s;
  if (auto s = reader.optional_table("nvlink", nvlink); !s) return s;
  if (auto s = reader.optional_table("nic", nic); !s) return s;

  if (auto s = reader.require("devices"); !s) return s;
  auto devices = reader.table_array("devices");
  ACTORPIPE_TRY(devices);
  // A server's switches and groups are laid out by its device count: none is no server.
  if (devices->empty())
    return error_at(*reader.node("devices"), reader.key_path("devices"), "lists no devices: give at least one group");
  for (std::size_t i = 0; i < devices->size(); ++i) {
    TableReader r(*(*devices)[i], reader.key_path("devices[" + std::to_string(i) + "]"));
    DeviceGroup group;
    if (auto s = r.string("kind", group.kind); !s) return s;
    if (auto s = r.integer("count", group.count, 1u, 4096u); !s) return s;
    if (auto s = r.number("speed", group.speed, 1e-6, 1e6); !s) return s;
    if (auto s = r.require("memory"); !s) return s;
    if (auto s = r.bytes("memory", group.memory); !s) return s;
    if (group.memory == 0) return error_at(*r.node("memory"), r.key_path("memory"), "must be positive");
    if (auto s = r.bandwidth("memory_bandwidth", group.memory_bandwidth); !s) return s;
    if (auto s = r.finish(); !s) return s;
    groups.push_back(group);
  }
  return reader.finish();
}

/// Lays out one server's switches, bridges and devices from its options.
void add_server(ClusterSpec& cluster, const ServerOptions& options, const std::vector<DeviceGroup>& groups,
                const std::string& name, std::string host) {
  std::size_t device_count = 0;
  for (const auto& g : groups)
    device_count += g.count;
  const std::size_t per_switch = options.devices_per_switch ? options.devices_per_switch : device_count;
  const std::size_t switch_count = (device_count + per_switch - 1) / per_switch;
  const std::size_t per_bridge = options.switches_per_bridge ? options.switches_per_bridge : switch_count;
  const std::size_t per_nvlink = options.devices_per_nvlink_group ? options.devices_per_nvlink_group : device_count;

  Server server;
  server.name = name;
  server.host = std::move(host);
  server.nics = options.nics;
  server.nic_bandwidth = options.nic_bandwidth > 0 ? options.nic_bandwidth : cluster.network.bandwidth;
  server.inter_bridge_bandwidth = options.inter_bridge_bandwidth;
  server.nvlink_bandwidth = options.nvlink_bandwidth;
  for (std::size_t s = 0; s < switch_count; ++s)
    server.pcie_switches.push_back({options.switch_bandwidth, s / per_bridge});
  for (std::size_t b = 0; b < (switch_count + per_bridge - 1) / per_bridge; ++b)
    server.host_bridges.push_back({options.bridge_bandwidth > 0 ? options.bridge_bandwidth : options.switch_bandwidth});

  const std::size_t server_index = cluster.servers.size();
  cluster.servers.push_back(std::move(server));
  std::size_t local = 0;
  for (const auto& group : groups) {
    for (std::uint32_t i = 0; i < group.count; ++i, ++local) {
      Device device;
      device.name = name + (group.kind == "cpu" ? "/cpu" : "/gpu") + std::to_string(local);
      device.kind = group.kind;
      device.speed = group.speed;
      device.memory_bytes = group.memory;
      device.memory_bandwidth = group.memory_bandwidth;
      device.server = server_index;
      device.pcie_switch = local / per_switch;
      device.nvlink_group = options.nvlink_bandwidth > 0 ? static_cast<int>(local / per_nvlink) : -1;
      cluster.devices.push_back(std::move(device));
    }
  }
}

} // namespace

Result<ClusterSpec> read_cluster(const toml::table& table, const std::string& path) {
  TableReader reader(table, path);
  ClusterSpec cluster;
  cluster.network = {25e9 / 8, 5e-6};
  ACTORPIPE_TRY(reader.string("name", cluster.name));
  if (auto s = reader.optional_table("network",
                                     [&](TableReader& r) -> Status {
                                       if (auto s = r.bandwidth("bandwidth", cluster.network.bandwidth); !s) return s;
                                       return r.duration("latency", cluster.network.latency);
                                     });
      !s)
    return std::move(s).error();
  ACTORPIPE_TRY(reader.require("servers"));
  auto servers = reader.table_array("servers");
  ACTORPIPE_TRY(servers);
  ACTORPIPE_TRY(reader.finish());

  std::uint64_t devices = 0;
  for (std::size_t i = 0; i < servers->size(); ++i) {
    ServerOptions options;
    std::vector<DeviceGroup> groups;
    const std::string server_path = reader.key_path("servers[" + std::to_string(i) + "]");
    ACTORPIPE_TRY(read_server(*(*servers)[i], server_path, options, groups));
    // Counted before anything is laid out: a typo of a count must not take the machine's memory.
    std::uint64_t per_server = 0;
    for (const DeviceGroup& g : groups)
      per_server += g.count;
    devices += per_server * options.count;
    if (devices > max_cluster_devices)
      return error_at(*(*servers)[i], server_path,
                      "brings the cluster to " + std::to_string(devices) + " devices; a cluster has at most " +
                          std::to_string(max_cluster_devices));
    for (std::uint32_t c = 0; c < options.count; ++c)
      add_server(cluster, options, groups, options.count == 1 ? options.name : options.name + "-" + std::to_string(c),
                 options.hosts.empty() ? std::string() : options.hosts[c]);
  }
  if (auto s = cluster.validate(); !s) {
    if (!path.empty()) return error_at(table, path, s.error().message);
    const auto place = place_of(table.source()); // a cluster file's: the file as a whole
    return place ? std::move(s).error().placed(*place) : std::move(s).error();
  }
  return cluster;
}

} // namespace actorpipe::config
