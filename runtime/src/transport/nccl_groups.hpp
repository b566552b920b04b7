#pragma once

/// c10d's NCCL process groups for the tensor transport, and how its ranks tell GPUs
/// apart: the pieces of transport/ that need CUDA's headers, kept here so that the rest
/// of the transport builds the same with and without them. Without CUDA every answer
/// says there is none. LibTorch inside: include only from the training code.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace actorpipe::transport::nccl {

/// Whether this build's LibTorch has NCCL and this process sees a GPU.
bool available();

/// CUDA devices this process sees; 0 without CUDA.
int visible_gpus();

/// GPU `index`'s UUID, as text: the same GPU's in every process of the machine, and no
/// other GPU's anywhere.
std::string gpu_uuid(int index);

/// A c10d NCCL process group of `size` ranks, this one `rank`, met through `store`.
/// Its communicators are built at its first operation, which every member must reach.
/// Throws std::runtime_error without NCCL.
c10::intrusive_ptr<c10d::Backend> process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::milliseconds timeout);

} // namespace actorpipe::transport::nccl
