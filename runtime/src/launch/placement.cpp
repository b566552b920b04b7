#include "launch/placement.hpp"

#include <algorithm>

namespace actorpipe::launch {

Result<std::vector<std::vector<std::size_t>>> place_stages(const Plan& plan, std::size_t hosts,
                                                           std::size_t first_rank) {
  std::vector<DeviceId> devices;
  for (const auto& pipeline : plan.devices)
    devices.insert(devices.end(), pipeline.begin(), pipeline.end());
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (hosts == 0 || hosts > devices.size())
    return Error::bad_input(std::to_string(hosts) + " worker processes for a plan on " +
                            std::to_string(devices.size()) +
                            " devices: each process runs the stages of 1 device or more");
  std::vector<std::vector<std::size_t>> rank(plan.devices.size());
  for (std::size_t p = 0; p < plan.devices.size(); ++p)
    for (const DeviceId device : plan.devices[p]) {
      const auto at =
          static_cast<std::size_t>(std::lower_bound(devices.begin(), devices.end(), device) - devices.begin());
      rank[p].push_back(first_rank + at * hosts / devices.size());
    }
  return rank;
}

Result<std::vector<std::string>> process_hosts(const Plan& plan, const ClusterSpec& cluster,
                                               const std::vector<std::vector<std::size_t>>& placement,
                                               std::size_t first_rank) {
  std::vector<std::string> hosts, servers; // by rank − first_rank: the host, and the server that named it
  for (std::size_t p = 0; p < placement.size(); ++p)
    for (std::size_t s = 0; s < placement[p].size(); ++s) {
      const std::size_t at = placement[p][s] - first_rank;
      if (at >= hosts.size()) {
        hosts.resize(at + 1);
        servers.resize(at + 1);
      }
      const Server& server = cluster.servers.at(cluster.devices.at(plan.devices[p][s]).server);
      if (server.host.empty()) continue;
      if (!hosts[at].empty() && hosts[at] != server.host)
        return Error::bad_input("worker process " + std::to_string(placement[p][s]) + " would run devices of server '" +
                                servers[at] + "' (host " + hosts[at] + ") and of server '" + server.name + "' (host " +
                                server.host + "): another number of processes keeps each on one machine");
      hosts[at] = server.host;
      servers[at] = server.name;
    }
  return hosts;
}

} // namespace actorpipe::launch
