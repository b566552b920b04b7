/// place_of() and the check that a plan's CUDA devices are here.

#include "device/placement.hpp"

#include <cctype>

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
