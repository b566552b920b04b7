/// The GPU entry points of libactorpipe: answered by the training runtime, whose
/// LibTorch owns the process's one CUDA runtime (train/training_entry.hpp), so that
/// planning code without LibTorch never loads a CUDA runtime of its own.

#include <actorpipe/gpu.hpp>

#include "train/training_entry.hpp"

namespace actorpipe {

bool built_with_cuda() {
  const auto entry = train::training_entry_points();
  return entry && (*entry)->cuda_built();
}

Result<std::vector<GpuInfo>> query_gpus() {
  const auto entry = train::training_entry_points();
  ACTORPIPE_TRY(entry);
  return (*entry)->query_gpus();
}

Result<std::string> check_nccl() {
  const auto entry = train::training_entry_points();
  ACTORPIPE_TRY(entry);
  return (*entry)->check_nccl();
}

} // namespace actorpipe
