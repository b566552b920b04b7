#pragma once

/// This machine's CUDA devices as LibTorch sees them, and NCCL among them: the answers
/// behind actorpipe/gpu.hpp, given through the training runtime's entry points. Built
/// in every build; without CUDA each query says so.

#include <actorpipe/gpu.hpp>

#include <string>
#include <vector>

namespace actorpipe::device {

/// Whether this build's LibTorch has CUDA, and actorpipe's CUDA code was compiled.
bool cuda_built();

/// The CUDA devices visible to this process; an error says why there are none.
Result<std::vector<GpuInfo>> query_gpus();

/// One c10d NCCL process group over every visible GPU (a rank per GPU, each on a thread
/// of its own), an all-reduce of one float per GPU through it, checked; NCCL's version.
Result<std::string> check_nccl();

/// Starts counting the caching allocator's peak anew on every CUDA device.
void reset_peak_memory();
/// By CUDA device: the most bytes the caching allocator held allocated since the last
/// reset_peak_memory(); empty without CUDA.
std::vector<std::uint64_t> peak_memory_bytes();
/// Hands the caching allocator's free blocks back to CUDA on every device, so that what
/// ran before in this process (with other shapes) leaves no memory reserved that a CUDA
/// graph's private pool could not use. Call it only while no stage computes.
void release_cached_memory();

/// "LibTorch 2.11.0 (CUDA 13.0)" or "LibTorch 2.11.0 (CPU only)".
std::string libtorch_text();

} // namespace actorpipe::device
