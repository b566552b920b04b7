/// place_of(), which stages share a GPU, and the check that a plan's CUDA devices are
/// here.

#include "device/placement.hpp"

#include <cctype>
#include <map>

namespace actorpipe::device {

Place place_of(const Device& device) {
  if (!device.computes_on_cuda()) return {device.kind == "emulated" ? Kind::emulated : Kind::cpu, -1};
  std::size_t digits = device.name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(device.name[digits - 1])))
    --digits;
  const std::string number = device.name.substr(digits);
  return {Kind::cuda, number.empty() || number.size() > 6 ? 0 : std::stoi(number)};
}

bool uses_cuda(const ClusterSpec& cluster, const Plan& plan) {
  for (const auto& pipeline : plan.devices)
    for (const DeviceId id : pipeline)
      if (place_of(cluster.devices[id]).kind == Kind::cuda) return true;
  return false;
}

std::vector<std::vector<char>> shares_gpu(const ClusterSpec& cluster, const Plan& plan,
                                          const std::vector<std::vector<char>>& runs_here) {
  auto here = [&](std::size_t p, std::size_t s) {
    return runs_here.empty() || (p < runs_here.size() && s < runs_here[p].size() && runs_here[p][s]);
  };
  auto gpu_of = [&](std::size_t p, std::size_t s) {
    const Place place = place_of(cluster.devices[plan.devices[p][s]]);
    return place.kind == Kind::cuda ? place.cuda_index : -1;
  };
  std::map<int, std::size_t> stages_on; // by CUDA device, the stages here on it
  for (std::size_t p = 0; p < plan.devices.size(); ++p)
    for (std::size_t s = 0; s < plan.devices[p].size(); ++s)
      if (here(p, s) && gpu_of(p, s) >= 0) ++stages_on[gpu_of(p, s)];
  std::vector<std::vector<char>> shared(plan.devices.size());
  for (std::size_t p = 0; p < plan.devices.size(); ++p)
    for (std::size_t s = 0; s < plan.devices[p].size(); ++s)
      shared[p].push_back(here(p, s) && gpu_of(p, s) >= 0 && stages_on[gpu_of(p, s)] > 1);
  return shared;
}

Status check_present(const JobSpec& job, const Plan& plan, std::size_t visible, const std::string& why_none) {
  for (std::size_t p = 0; p < plan.devices.size(); ++p)
    for (std::size_t s = 0; s < plan.devices[p].size(); ++s) {
      const Device& device = job.cluster.devices[plan.devices[p][s]];
      const Place place = place_of(device);
      if (place.kind != Kind::cuda || static_cast<std::size_t>(place.cuda_index) < visible) continue;
      return Error::bad_input(
          job.where("cluster") + "the plan puts stage " + std::to_string(s) + " of pipeline " + std::to_string(p) +
          " on " + device.name + " (kind \"" + device.kind + "\", so cuda:" + std::to_string(place.cuda_index) +
          "), but " +
          (visible == 0 ? why_none
                        : "this machine has " + std::to_string(visible) + " CUDA device" + (visible == 1 ? "" : "s")) +
          "; give such devices kind \"cpu\" or \"emulated\" to run the plan without them");
    }
  return Ok{};
}

} // namespace actorpipe::device
