/// gpu_cuda: the CUDA build's GPU path on a machine with NVIDIA GPUs: the device
/// queries, an NCCL all-reduce over every visible GPU (check_nccl()), and
/// `actorpipe devices --nccl --json` reporting both. Skipped (exit 77, Meson's skip)
/// where actorpipe was built without CUDA or no GPU is visible, with the reason.

#include <actorpipe/gpu.hpp>

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <regex>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::cerr << "gpu_cuda: " << what << "\n";
  ++failures;
}

} // namespace

int main() {
  using namespace actorpipe;
  if (!built_with_cuda()) {
    std::cout << "gpu_cuda: skipped: actorpipe was built without CUDA (-Dcuda)\n";
    return 77;
  }
  const auto gpus = query_gpus();
  if (!gpus) {
    std::cout << "gpu_cuda: skipped: " << gpus.error().message << "\n";
    return 77;
  }
  check(!gpus->empty(), "query_gpus() found no device and said nothing");
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const GpuInfo& gpu = (*gpus)[i];
    const std::string which = "GPU " + std::to_string(i);
    check(gpu.index == static_cast<int>(i), which + " has index " + std::to_string(gpu.index));
    check(!gpu.name.empty(), which + " has no name");
    check(gpu.memory_bytes > 0, which + " has no memory");
    check(gpu.compute_major >= 3, which + " reports compute capability " + std::to_string(gpu.compute_major));
    check(gpu.multiprocessors > 0, which + " has no multiprocessors");
  }

  // Every GPU adds its 1 into the all-reduce; check_nccl() compares the sum.
  const auto nccl = check_nccl();
  check(static_cast<bool>(nccl), "the NCCL check failed: " + (nccl ? std::string() : nccl.error().message));
  const std::regex version(R"(\d+\.\d+\.\d+)");
  if (nccl) check(std::regex_match(*nccl, version), "NCCL's version reads '" + *nccl + "'");

  const auto cli = test::run_cli("devices --nccl --json");
  check(cli.status == 0, "`actorpipe devices --nccl --json` exited " + std::to_string(cli.status) + ": " + cli.err);
  if (cli.status == 0) {
    const auto json = nlohmann::json::parse(cli.out);
    check(json["gpus"].size() == gpus->size(), "`actorpipe devices` lists " + std::to_string(json["gpus"].size()) +
                                                   " GPUs, query_gpus() " + std::to_string(gpus->size()));
    check(json["nccl"].is_string() && std::regex_match(json["nccl"].get<std::string>(), version),
          "`actorpipe devices` reports NCCL as " + json["nccl"].dump());
  }
  if (failures == 0) std::cout << "gpu_cuda: " << gpus->size() << " GPUs, NCCL " << *nccl << "\n";
  return failures == 0 ? 0 : 1;
}
