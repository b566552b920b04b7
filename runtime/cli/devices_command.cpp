/// `actorpipe devices`: what this machine can compute on.

#include "commands.hpp"

#include <actorpipe/gpu.hpp>

#include "base/atomic_file.hpp"
#include "base/text.hpp"
#include "base/text_table.hpp"

#include <iostream>

#include <unistd.h>

namespace actorpipe::cli {

namespace {

/// This machine's name, for the server of its cluster file.
std::string host_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host[0] ? host : "localhost";
}

int devices(bool json, bool nccl, const std::string& cluster) {
  const DeviceSurvey survey = survey_devices(nccl);
  if (!cluster.empty()) {
    if (!survey.gpus) {
      std::cerr << "actorpipe: devices --cluster " << cluster << ": nothing written: " << survey.gpus.error().message
                << "\n";
      return 1;
    }
    const auto toml = gpus_as_cluster_toml(*survey.gpus, host_name());
    if (!toml) {
      std::cerr << "actorpipe: devices --cluster " << cluster << ": " << toml.error().message << "\n";
      return 1;
    }
    if (auto written = write_file_atomically(cluster, *toml); !written) {
      std::cerr << "actorpipe: devices --cluster: " << written.error().message << "\n";
      return exit_status(written.error().code);
    }
  }
  if (json) {
    std::cout << devices_to_json(survey);
  } else {
    std::cout << "cpu    " << survey.cpu_threads << " hardware threads\n";
    if (!survey.gpus) {
      std::cout << "cuda   " << survey.gpus.error().message << "\n";
    } else {
      text::Table table({{"gpu", text::Table::Align::right},
                         {"name"},
                         {"memory", text::Table::Align::right},
                         {"compute"},
                         {"SMs", text::Table::Align::right}});
      for (const GpuInfo& g : *survey.gpus)
        table.add_row({std::to_string(g.index), g.name, text::format_bytes(g.memory_bytes),
                       std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor),
                       std::to_string(g.multiprocessors)});
      std::cout << table.str();
    }
    if (survey.nccl)
      std::cout << "nccl   "
                << (*survey.nccl ? "all-reduce over every GPU ok, NCCL " + **survey.nccl : survey.nccl->error().message)
                << "\n";
  }
  // Having no GPU is a fact to report, not a failure, and so is an NCCL check skipped
  // for want of one; a check that ran and failed is a failure.
  if (survey.gpus && survey.nccl && !*survey.nccl) return exit_status(survey.nccl->error().code);
  return 0;
}

} // namespace

void add_devices_command(CLI::App& app, Run& run) {
  auto json = std::make_shared<bool>(false);
  auto nccl = std::make_shared<bool>(false);
  auto cluster = std::make_shared<std::string>();
  auto* command = app.add_subcommand("devices", "List this machine's CPU threads and CUDA GPUs");
  command->add_flag("--json", *json, "print JSON");
  command->add_flag("--nccl", *nccl, "also set up an NCCL communicator over all GPUs and all-reduce through it");
  command->add_option("--cluster", *cluster, "also write this machine's GPUs as a cluster file that jobs can name");
  command->callback(
      [&run, json, nccl, cluster] { run = [json, nccl, cluster] { return devices(*json, *nccl, *cluster); }; });
}

} // namespace actorpipe::cli
