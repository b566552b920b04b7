#pragma once

/// CUDA devices of this machine and NCCL among them. Present in every build; where
/// actorpipe was built without CUDA, or no GPU is there, calls return a clear Error.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
};

/// True when this actorpipe was built with CUDA and NCCL.
ACTORPIPE_EXPORT bool built_with_cuda();

/// The CUDA devices visible to this process.
ACTORPIPE_EXPORT Result<std::vector<GpuInfo>> query_gpus();

/// Sets up one NCCL communicator over every visible GPU, runs an all-reduce of one
/// float per device through it, and returns the NCCL version; checks the NCCL path.
ACTORPIPE_EXPORT Result<std::string> check_nccl();

} // namespace actorpipe
