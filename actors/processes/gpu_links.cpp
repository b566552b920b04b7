/// gpu_links() and group_gpus(): the plan's GPUs, seen from the processes.

#include "processes/gpu_links.hpp"

#include "device/placement.hpp"

#include <algorithm>

namespace actorpipe::actors {

namespace {

/// The CUDA device of stage `s` of pipeline `p`, on its machine; -1 where it is no GPU.
int cuda_of(const ClusterSpec& cluster, const Plan& plan, std::size_t p, std::size_t s) {
  const device::Place place = device::place_of(cluster.devices.at(plan.devices.at(p).at(s)));
  return place.kind == device::Kind::cuda ? place.cuda_index : -1;
}

} // namespace

std::vector<transport::GpuLink> gpu_links(const ClusterSpec& cluster, const Plan& plan,
                                          const std::vector<std::vector<std::uint64_t>>& placement) {
  std::vector<transport::GpuLink> links;
  const std::size_t S = plan.stages.size();
  for (std::size_t p = 0; p < plan.pipelines; ++p)
    for (std::size_t s = 0; s + 1 < S; ++s) {
      const std::uint64_t here = placement[p][s], next = placement[p][s + 1];
      const int here_gpu = cuda_of(cluster, plan, p, s), next_gpu = cuda_of(cluster, plan, p, s + 1);
      if (here == next || here_gpu < 0 || next_gpu < 0) continue;
      links.push_back({transport::TensorTransport::link_id(p, S, s, s + 1), here, next, here_gpu, next_gpu});
      links.push_back({transport::TensorTransport::link_id(p, S, s + 1, s), next, here, next_gpu, here_gpu});
    }
  return links;
}

std::vector<int> group_gpus(const ClusterSpec& cluster, const Plan& plan,
                            const std::vector<std::vector<std::uint64_t>>& placement, std::size_t stage,
                            const std::vector<std::size_t>& pipelines, const std::vector<std::size_t>& ranks) {
  std::vector<int> gpus(ranks.size(), -1);
  std::vector<std::size_t> replicas(ranks.size(), 0);
  for (const std::size_t p : pipelines) {
    const auto at = std::find(ranks.begin(), ranks.end(), placement[p][stage]);
    if (at == ranks.end()) continue;
    const auto i = static_cast<std::size_t>(at - ranks.begin());
    gpus[i] = cuda_of(cluster, plan, p, stage);
    ++replicas[i];
  }
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (gpus[i] < 0 || replicas[i] != 1) return {};
  return gpus;
}

} // namespace actorpipe::actors
