#pragma once

/// Where a plan's stage computes in a run, read off its cluster device: the CPU, the
/// CPU at an emulated device's modelled speed, or a CUDA device. No LibTorch here.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace actorpipe::device {

enum class Kind { cpu, emulated, cuda };

struct Place {
  Kind kind = Kind::cpu;
  int cuda_index = -1; ///< for Kind::cuda: N of "SERVER/gpuN", the device cuda:N of its server
};

/// Kind "cpu" and "emulated" are what they say; any other kind ("H100", "V100-32GB") is a
/// CUDA device, numbered by the end of its name ("fast/gpu3": cuda:3; 0 where the name
/// ends in no number).
Place place_of(const Device& device);

/// Whether any stage of `plan` is on a CUDA device.
bool uses_cuda(const ClusterSpec& cluster, const Plan& plan);

/// By pipeline and stage, whether the stage is on a CUDA device that another stage of
/// this process computes on too (train.cuda_graphs "auto" replays graphs there).
/// `runs_here[p][s]`: whether this process runs stage s of pipeline p; empty: every
/// stage. Devices of other processes may name the same cuda:N on other servers.
std::vector<std::vector<char>> shares_gpu(const ClusterSpec& cluster, const Plan& plan,
                                          const std::vector<std::vector<char>>& runs_here = {});

/// Bad input naming the first stage of `plan` whose CUDA device this machine lacks
/// (`visible` CUDA devices; where there are none, `why_none` says so and why).
Status check_present(const JobSpec& job, const Plan& plan, std::size_t visible, const std::string& why_none);

} // namespace actorpipe::device
