/// survey_devices() and its JSON: what `actorpipe devices` and a script's
/// actorpipe.devices() report; the GPUs as a cluster file.

#include <actorpipe/gpu.hpp>

#include "base/text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <thread>

namespace actorpipe {

DeviceSurvey survey_devices(bool check_nccl_too) {
  DeviceSurvey survey;
  survey.cpu_threads = std::thread::hardware_concurrency();
  survey.cuda_built = built_with_cuda();
  survey.gpus = query_gpus();
  if (check_nccl_too)
    survey.nccl = survey.gpus ? check_nccl()
                              : Result<std::string>(Error{survey.gpus.error().code, "skipped: no GPU to check it on"});
  return survey;
}

Result<std::string> gpus_as_cluster_toml(const std::vector<GpuInfo>& gpus, const std::string& server) {
  if (gpus.empty()) return Error::bad_input("no GPU to describe: this machine has no CUDA device LibTorch sees");
  // Device groups in the order their kinds first appear; GPUs of one kind and memory
  // are one group.
  std::vector<std::pair<std::pair<std::string, std::uint64_t>, std::size_t>> groups;
  std::map<std::pair<std::string, std::uint64_t>, int> multiprocessors;
  for (const GpuInfo& g : gpus) {
    const auto key = std::pair{g.name, g.memory_bytes};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& group) { return group.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, 1});
      multiprocessors[key] = g.multiprocessors;
    } else {
      ++it->second;
    }
  }
  const double first = std::max(1, multiprocessors[groups.front().first]);
  std::ostringstream t;
  t << "# " << server << "'s GPUs, as `actorpipe devices --cluster` found them. Each kind's speed is\n"
    << "# relative to the first by multiprocessors only: correct it once its blocks are measured.\n"
    << "name = \"" << server << "\"\nnetwork = { bandwidth = \"25 Gb/s\", latency = \"5 us\" }\n\n"
    << "[[servers]]\nname = \"" << server << "\"\npcie = { devices_per_switch = " << gpus.size()
    << ", switch_bandwidth = \"16 GB/s\", inter_bridge_bandwidth = \"20 GB/s\" }\n"
    << "nic = { count = 1, bandwidth = \"25 Gb/s\" }\ndevices = [";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& [key, count] = groups[i];
    t << (i ? ",\n           " : "") << "{ kind = \"" << key.first << "\", count = " << count
      << ", speed = " << text::format_fixed(multiprocessors[key] / first, 2) << ", memory = \""
      << text::format_fixed(static_cast<double>(key.second) / (1ULL << 30), 1) << " GiB\" }";
  }
  t << "]\n";
  return t.str();
}

std::string devices_to_json(const DeviceSurvey& survey) {
  nlohmann::json out = {{"cpu", {{"threads", survey.cpu_threads}}}, {"cuda_built", survey.cuda_built}};
  nlohmann::json list = nlohmann::json::array();
  if (survey.gpus)
    for (const GpuInfo& g : *survey.gpus)
      list.push_back({{"index", g.index},
                      {"name", g.name},
                      {"memory_bytes", g.memory_bytes},
                      {"compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
                      {"multiprocessors", g.multiprocessors}});
  else
    out["cuda_error"] = survey.gpus.error().message;
  out["gpus"] = list;
  if (survey.nccl)
    out["nccl"] = *survey.nccl ? nlohmann::json(**survey.nccl) : nlohmann::json(survey.nccl->error().message);
  return out.dump(2) + "\n";
}

} // namespace actorpipe
