#pragma once

/// What the suites that train check runs against: the parameters a run's checkpoint
/// holds, the same job trained the plain way, and how far two sets of parameters are
/// apart. LibTorch inside.

#include <actorpipe/job.hpp>

#include <torch/torch.h>

#include <string>
#include <vector>

namespace actorpipe::test {

/// Every parameter of a run's checkpoint, in model order.
std::vector<torch::Tensor> checkpoint_parameters(const std::string& path, std::size_t stages);

/// The same job trained the plain way: one process, the whole batch at once.
std::vector<torch::Tensor> single_process(const JobSpec& job, std::uint64_t steps);

/// The largest relative difference (in the norm) of a tensor of `a` from `b`'s.
double relative_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b);

} // namespace actorpipe::test
