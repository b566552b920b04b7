/// `actorpipe devices`: what this machine can compute on.

#include "commands.hpp"

#include <actorpipe/gpu.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <thread>

namespace actorpipe::cli {

namespace {

int devices(bool json, bool nccl) {
  const unsigned cores = std::thread::hardware_concurrency();
  auto gpus = query_gpus();
  Result<std::string> nccl_version = Error::unsupported("not checked (use --nccl)");
  if (nccl) nccl_version = gpus ? check_nccl() : Error{gpus.error().code, "skipped: no GPU to check it on"};

  if (json) {
    nlohmann::json out = {{"cpu", {{"threads", cores}}}, {"cuda_built", built_with_cuda()}};
    nlohmann::json list = nlohmann::json::array();
    if (gpus)
      for (const GpuInfo& g : *gpus)
        list.push_back({{"index", g.index},
                        {"name", g.name},
                        {"memory_bytes", g.memory_bytes},
                        {"compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
                        {"multiprocessors", g.multiprocessors}});
    else
      out["cuda_error"] = gpus.error().message;
    out["gpus"] = list;
    if (nccl) out["nccl"] = nccl_version ? nlohmann::json(*nccl_version) : nlohmann::json(nccl_version.error().message);
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "cpu    " << cores << " hardware threads\n";
    if (!gpus) {
      std::cout << "cuda   " << gpus.error().message << "\n";
    } else {
      text::Table table({{"gpu", text::Table::Align::right},
                         {"name"},
                         {"memory", text::Table::Align::right},
                         {"compute"},
                         {"SMs", text::Table::Align::right}});
      for (const GpuInfo& g : *gpus)
        table.add_row({std::to_string(g.index), g.name, text::format_bytes(g.memory_bytes),
                       std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor),
                       std::to_string(g.multiprocessors)});
      std::cout << table.str();
    }
    if (nccl)
      std::cout << "nccl   "
                << (nccl_version ? "all-reduce over every GPU ok, NCCL " + *nccl_version : nccl_version.error().message)
                << "\n";
  }
  // Having no GPU is a fact to report, not a failure; a failed NCCL check that was asked for is.
  if (nccl && !nccl_version) return exit_status(nccl_version.error().code);
  return 0;
}

} // namespace

void add_devices_command(CLI::App& app, Run& run) {
  auto json = std::make_shared<bool>(false);
  auto nccl = std::make_shared<bool>(false);
  auto* command = app.add_subcommand("devices", "List this machine's CPU threads and CUDA GPUs");
  command->add_flag("--json", *json, "print JSON");
  command->add_flag("--nccl", *nccl, "also set up an NCCL communicator over all GPUs and all-reduce through it");
  command->callback([&run, json, nccl] { run = [json, nccl] { return devices(*json, *nccl); }; });
}

} // namespace actorpipe::cli
