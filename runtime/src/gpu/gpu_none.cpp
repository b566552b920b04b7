/// The GPU entry points of a build without CUDA: each says so.

#include <actorpipe/gpu.hpp>

namespace actorpipe {

namespace {

Error not_built() {
  return Error::unsupported("this actorpipe was built without CUDA (reconfigure with -Dcuda=enabled "
                            "where the CUDA toolkit and NCCL are installed)");
}

} // namespace

bool built_with_cuda() { return false; }
Result<std::vector<GpuInfo>> query_gpus() { return not_built(); }
Result<std::string> check_nccl() { return not_built(); }

} // namespace actorpipe
