/// CUDA device queries and an NCCL check through LibTorch's own CUDA API (c10::cuda,
/// at::cuda) and c10d's ProcessGroupNCCL: no CUDA runtime beside LibTorch's.

#include "device/cuda_queries.hpp"

#include "base/text.hpp"

#include <torch/version.h>

#ifdef ACTORPIPE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/torch.h>

#include <thread>
#endif

namespace actorpipe::device {

#ifdef ACTORPIPE_CUDA

bool cuda_built() { return true; }

Result<std::vector<GpuInfo>> query_gpus() {
  int count = 0;
  try {
    count = c10::cuda::device_count_ensure_non_zero();
  } catch (const std::exception& e) {
    return Error::run_failed("no CUDA device found (" + text::message_of(e) +
                             "); GPU work needs a machine with an NVIDIA GPU and its driver");
  }
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    gpus.push_back({i, p->name, p->totalGlobalMem, p->major, p->minor, p->multiProcessorCount});
  }
  return gpus;
}

Result<std::string> check_nccl() {
  auto gpus = query_gpus();
  ACTORPIPE_TRY(gpus);
  const int count = static_cast<int>(gpus->size());
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::string> failures(static_cast<std::size_t>(count));
  std::vector<float> sums(static_cast<std::size_t>(count), 0.0f);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < count; ++rank)
    ranks.emplace_back([&, rank] {
      try {
        c10::cuda::CUDAGuard on(static_cast<c10::DeviceIndex>(rank));
        auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, count);
        std::vector<at::Tensor> one{torch::ones({1}, torch::TensorOptions().device(torch::kCUDA, rank))};
        group->allreduce(one)->wait();
        sums[static_cast<std::size_t>(rank)] = one.front().item<float>();
        group->shutdown();
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(rank)] = text::message_of(e);
      }
    });
  for (auto& rank : ranks)
    rank.join();
  for (int rank = 0; rank < count; ++rank) {
    if (!failures[static_cast<std::size_t>(rank)].empty())
      return Error::run_failed("NCCL all-reduce on GPU " + std::to_string(rank) + ": " +
                               failures[static_cast<std::size_t>(rank)]);
    if (sums[static_cast<std::size_t>(rank)] != static_cast<float>(count))
      return Error::run_failed("NCCL all-reduce on GPU " + std::to_string(rank) + " gave " +
                               std::to_string(sums[static_cast<std::size_t>(rank)]) + ", expected " +
                               std::to_string(count));
  }
  return c10d::getNcclVersion();
}

void reset_peak_memory() {
  for (int i = 0; i < static_cast<int>(c10::cuda::device_count()); ++i)
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(i));
}

std::vector<std::uint64_t> peak_memory_bytes() {
  std::vector<std::uint64_t> peaks;
  for (int i = 0; i < static_cast<int>(c10::cuda::device_count()); ++i) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(i));
    peaks.push_back(static_cast<std::uint64_t>(
        stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak));
  }
  return peaks;
}

void release_cached_memory() {
  if (c10::cuda::device_count() > 0) c10::cuda::CUDACachingAllocator::emptyCache();
}

std::string libtorch_text() {
  return std::string("LibTorch ") + TORCH_VERSION + " (CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + ")";
}

#else

namespace {

Error not_built() {
  return Error::unsupported("this actorpipe was built without CUDA: its LibTorch has none, or it was configured "
                            "with -Dcuda=disabled (docs/gpu.md)");
}

} // namespace

bool cuda_built() { return false; }
Result<std::vector<GpuInfo>> query_gpus() { return not_built(); }
Result<std::string> check_nccl() { return not_built(); }
void reset_peak_memory() {}
std::vector<std::uint64_t> peak_memory_bytes() { return {}; }
void release_cached_memory() {}
std::string libtorch_text() { return std::string("LibTorch ") + TORCH_VERSION + " (CPU only)"; }

#endif

} // namespace actorpipe::device
