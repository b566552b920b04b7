#pragma once

/// Which of a run's tensors may go through NCCL, read off its plan and the processes its
/// stages run in: the links between neighbouring stages in different processes whose
/// devices are both GPUs, and the CUDA devices of a stage index's replicas for their
/// collectives. The transport then opens NCCL where the GPUs at the two ends differ
/// (transport/tensor_transport.hpp). No LibTorch here.

#include "transport/tensor_transport.hpp"

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/plan.hpp>

#include <cstddef>
#include <vector>

namespace actorpipe::actors {

/// Both directions of every link between stages s and s + 1 of a pipeline of `plan`
/// whose processes (`placement[p][s]`) differ and whose devices are both CUDA devices,
/// in order of pipeline, stage and direction: what every worker gives open_gpu_links().
std::vector<transport::GpuLink> gpu_links(const ClusterSpec& cluster, const Plan& plan,
                                          const std::vector<std::vector<std::uint64_t>>& placement);

/// For a collective of stage `stage` over the processes `ranks` (sorted) of the replicas
/// of `pipelines`: the CUDA device each rank holds its tensors on, by the order of
/// `ranks`; empty where some rank holds them on the CPU or has more than one replica of
/// the stage among `pipelines` (its tensors are then not on one GPU of its own).
std::vector<int> group_gpus(const ClusterSpec& cluster, const Plan& plan,
                            const std::vector<std::vector<std::uint64_t>>& placement, std::size_t stage,
                            const std::vector<std::size_t>& pipelines, const std::vector<std::size_t>& ranks);

} // namespace actorpipe::actors
