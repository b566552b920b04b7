/// Topology: the placement's questions, answered in one place.

#include "launch/topology.hpp"

#include <algorithm>
#include <set>

namespace actorpipe::launch {

Topology::Topology(std::vector<std::vector<std::uint64_t>> ranks) : ranks_(std::move(ranks)) {}

Topology Topology::one_process(std::size_t pipelines, std::size_t stages) {
  return Topology(std::vector<std::vector<std::uint64_t>>(pipelines, std::vector<std::uint64_t>(stages, 0)));
}

std::optional<std::uint64_t> Topology::previous_rank(std::size_t pipeline, std::size_t stage) const {
  if (stage == 0) return std::nullopt;
  return ranks_[pipeline][stage - 1];
}

std::optional<std::uint64_t> Topology::next_rank(std::size_t pipeline, std::size_t stage) const {
  if (stage + 1 >= stages()) return std::nullopt;
  return ranks_[pipeline][stage + 1];
}

std::vector<std::size_t> Topology::replicas_in(std::uint64_t rank, std::size_t stage) const {
  std::vector<std::size_t> pipelines;
  for (std::size_t p = 0; p < ranks_.size(); ++p)
    if (ranks_[p][stage] == rank) pipelines.push_back(p);
  return pipelines;
}

std::vector<std::uint64_t> Topology::processes_of(std::size_t stage, const std::vector<std::size_t>& pipelines) const {
  std::set<std::uint64_t> ranks;
  for (const std::size_t p : pipelines)
    ranks.insert(ranks_[p][stage]);
  return {ranks.begin(), ranks.end()};
}

std::size_t Topology::stages_in(std::uint64_t rank) const {
  std::size_t count = 0;
  for (const auto& pipeline : ranks_)
    count += static_cast<std::size_t>(std::count(pipeline.begin(), pipeline.end(), rank));
  return count;
}

bool Topology::whole_in(std::uint64_t rank, std::size_t pipeline) const {
  const auto& stages = ranks_[pipeline];
  return std::all_of(stages.begin(), stages.end(), [&](std::uint64_t r) { return r == rank; });
}

std::vector<std::uint64_t> Topology::processes() const {
  std::set<std::uint64_t> ranks;
  for (const auto& pipeline : ranks_)
    ranks.insert(pipeline.begin(), pipeline.end());
  return {ranks.begin(), ranks.end()};
}

} // namespace actorpipe::launch
