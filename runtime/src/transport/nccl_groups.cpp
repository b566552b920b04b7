/// NCCL process groups and GPU UUIDs, where LibTorch has CUDA.

#include "transport/nccl_groups.hpp"

#include <stdexcept>

#ifdef ACTORPIPE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <cstdio>
#endif

namespace actorpipe::transport::nccl {

#ifdef ACTORPIPE_CUDA

int visible_gpus() {
  try {
    return static_cast<int>(c10::cuda::device_count());
  } catch (const std::exception&) {
    return 0;
  }
}

bool available() { return visible_gpus() > 0; }

std::string gpu_uuid(int index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  std::string text;
  for (const char byte : p->uuid.bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned char>(byte));
    text += two;
  }
  return text;
}

c10::intrusive_ptr<c10d::Backend> process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

#else

int visible_gpus() { return 0; }

bool available() { return false; }

std::string gpu_uuid(int) { return {}; }

c10::intrusive_ptr<c10d::Backend> process_group(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                std::chrono::milliseconds) {
  throw std::runtime_error("this build of actorpipe has no NCCL");
}

#endif

} // namespace actorpipe::transport::nccl
