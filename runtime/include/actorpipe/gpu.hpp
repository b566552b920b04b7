#pragma once

/// CUDA devices of this machine and NCCL among them. Present in every build; where
/// actorpipe was built without CUDA, or no GPU is there, calls return a clear Error.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <cstdint>
#include <optional>
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

/// What this machine can compute on, as `actorpipe devices` reports it.
struct DeviceSurvey {
  unsigned cpu_threads = 0;
  bool cuda_built = false;
  Result<std::vector<GpuInfo>> gpus = std::vector<GpuInfo>{}; ///< the error says why there are none
  std::optional<Result<std::string>> nccl;                    ///< check_nccl()'s answer, when asked for
};

/// Looks at the CPU and the GPUs, and checks NCCL when `check_nccl_too`.
ACTORPIPE_EXPORT DeviceSurvey survey_devices(bool check_nccl_too);

/// This machine's GPUs as a cluster file that jobs can name (`cluster = "FILE"`): one
/// server called `server`, a device group per kind of GPU (its name, memory, count, and a
/// speed relative to the first kind by multiprocessors, a guess to correct once its
/// blocks are measured), behind one PCIe switch, with one 25 Gb/s NIC. Bad input
/// where `gpus` is empty.
ACTORPIPE_EXPORT Result<std::string> gpus_as_cluster_toml(const std::vector<GpuInfo>& gpus, const std::string& server);

/// {"cpu": {"threads"}, "cuda_built", "gpus": [{"index", "name", "memory_bytes",
/// "compute_capability", "multiprocessors"}], "cuda_error"?, "nccl"?}.
ACTORPIPE_EXPORT std::string devices_to_json(const DeviceSurvey& survey);

} // namespace actorpipe
