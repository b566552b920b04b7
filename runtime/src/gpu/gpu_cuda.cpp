/// CUDA device queries and an NCCL communicator over the local GPUs (built with -Dcuda).

#include <actorpipe/gpu.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

namespace actorpipe {

namespace {

Error cuda_error(const char* call, cudaError_t status) {
  return Error::run_failed(std::string(call) + ": " + cudaGetErrorString(status));
}

Error nccl_error(const char* call, ncclResult_t status) {
  return Error::run_failed(std::string(call) + ": " + ncclGetErrorString(status));
}

/// Owns the communicators, device buffers and streams of one check; frees them in order.
struct NcclCheck {
  std::vector<ncclComm_t> comms;
  std::vector<float*> buffers;
  std::vector<cudaStream_t> streams;

  ~NcclCheck() {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      cudaSetDevice(static_cast<int>(i));
      if (buffers[i]) cudaFree(buffers[i]);
      if (i < streams.size() && streams[i]) cudaStreamDestroy(streams[i]);
    }
    for (ncclComm_t comm : comms)
      if (comm) ncclCommDestroy(comm);
  }
};

} // namespace

bool built_with_cuda() { return true; }

Result<std::vector<GpuInfo>> query_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver || (status == cudaSuccess && count == 0))
    return Error::run_failed("no CUDA device found (" + std::string(cudaGetErrorString(status)) +
                             "); GPU work needs a machine with an NVIDIA GPU and its driver");
  if (status != cudaSuccess) return cuda_error("cudaGetDeviceCount", status);
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp properties{};
    if (const cudaError_t s = cudaGetDeviceProperties(&properties, i); s != cudaSuccess)
      return cuda_error("cudaGetDeviceProperties", s);
    gpus.push_back({i, properties.name, properties.totalGlobalMem, properties.major, properties.minor,
                    properties.multiProcessorCount});
  }
  return gpus;
}

Result<std::string> check_nccl() {
  auto gpus = query_gpus();
  ACTORPIPE_TRY(gpus);
  const int count = static_cast<int>(gpus->size());

  NcclCheck check;
  check.comms.assign(count, nullptr);
  if (const ncclResult_t s = ncclCommInitAll(check.comms.data(), count, nullptr); s != ncclSuccess)
    return nccl_error("ncclCommInitAll", s);
  check.buffers.assign(count, nullptr);
  check.streams.assign(count, nullptr);
  for (int i = 0; i < count; ++i) {
    if (const cudaError_t s = cudaSetDevice(i); s != cudaSuccess) return cuda_error("cudaSetDevice", s);
    if (const cudaError_t s = cudaMalloc(&check.buffers[i], sizeof(float)); s != cudaSuccess)
      return cuda_error("cudaMalloc", s);
    if (const cudaError_t s = cudaStreamCreate(&check.streams[i]); s != cudaSuccess)
      return cuda_error("cudaStreamCreate", s);
    const float one = 1.0f;
    if (const cudaError_t s = cudaMemcpy(check.buffers[i], &one, sizeof one, cudaMemcpyHostToDevice); s != cudaSuccess)
      return cuda_error("cudaMemcpy", s);
  }
  if (const ncclResult_t s = ncclGroupStart(); s != ncclSuccess) return nccl_error("ncclGroupStart", s);
  for (int i = 0; i < count; ++i)
    if (const ncclResult_t s =
            ncclAllReduce(check.buffers[i], check.buffers[i], 1, ncclFloat, ncclSum, check.comms[i], check.streams[i]);
        s != ncclSuccess)
      return nccl_error("ncclAllReduce", s);
  if (const ncclResult_t s = ncclGroupEnd(); s != ncclSuccess) return nccl_error("ncclGroupEnd", s);
  for (int i = 0; i < count; ++i) {
    cudaSetDevice(i);
    if (const cudaError_t s = cudaStreamSynchronize(check.streams[i]); s != cudaSuccess)
      return cuda_error("cudaStreamSynchronize", s);
    float sum = 0;
    if (const cudaError_t s = cudaMemcpy(&sum, check.buffers[i], sizeof sum, cudaMemcpyDeviceToHost); s != cudaSuccess)
      return cuda_error("cudaMemcpy", s);
    if (sum != static_cast<float>(count))
      return Error::run_failed("NCCL all-reduce on GPU " + std::to_string(i) + " gave " + std::to_string(sum) +
                               ", expected " + std::to_string(count));
  }
  int version = 0;
  ncclGetVersion(&version);
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

} // namespace actorpipe
