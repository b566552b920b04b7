/// survey_devices() and its JSON: what `actorpipe devices` and a script's
/// actorpipe.devices() report.

#include <actorpipe/gpu.hpp>

#include <nlohmann/json.hpp>

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
