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

} // namespace actorpipe::launch
