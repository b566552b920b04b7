#pragma once

/// A run's actors over its processes, from the plan's shape and its placement alone:
/// which process runs each stage, which replicas of a stage index share a process (and
/// so its averager, its server copy or its lockstep round), which pipelines run whole
/// in one process (their pipeline actor with them), and where each stage's neighbours
/// are. The coordinator's job actor and every worker's stage host read their parts of
/// one Topology, so that what one spawns and the other wires agree by construction; a
/// run in one process is the topology whose every stage is rank 0's.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace actorpipe::launch {

class Topology {
public:
  Topology() = default;
  /// `ranks[p][s]`: the process that runs stage s of pipeline p; 0 is the coordinator's.
  explicit Topology(std::vector<std::vector<std::uint64_t>> ranks);
  /// Every stage in one process, rank 0.
  static Topology one_process(std::size_t pipelines, std::size_t stages);

  std::size_t pipelines() const { return ranks_.size(); }
  std::size_t stages() const { return ranks_.empty() ? 0 : ranks_.front().size(); }
  const std::vector<std::vector<std::uint64_t>>& ranks() const { return ranks_; }

  std::uint64_t rank(std::size_t pipeline, std::size_t stage) const { return ranks_[pipeline][stage]; }
  bool runs(std::uint64_t rank, std::size_t pipeline, std::size_t stage) const {
    return ranks_[pipeline][stage] == rank;
  }
  /// The process of stage s's neighbour before it (s − 1) or after it (s + 1) in its
  /// pipeline; none at the ends.
  std::optional<std::uint64_t> previous_rank(std::size_t pipeline, std::size_t stage) const;
  std::optional<std::uint64_t> next_rank(std::size_t pipeline, std::size_t stage) const;

  /// The pipelines whose replica of stage `stage` runs in process `rank`, ascending:
  /// the members of that process's round, averager or server copy of the stage.
  std::vector<std::size_t> replicas_in(std::uint64_t rank, std::size_t stage) const;
  /// The processes that run the replicas of stage `stage` of `pipelines`, ascending:
  /// the ranks of the collective that syncs them.
  std::vector<std::uint64_t> processes_of(std::size_t stage, const std::vector<std::size_t>& pipelines) const;
  /// How many stages process `rank` runs.
  std::size_t stages_in(std::uint64_t rank) const;
  /// Whether every stage of `pipeline` runs in process `rank`.
  bool whole_in(std::uint64_t rank, std::size_t pipeline) const;
  /// The processes that run stages, ascending.
  std::vector<std::uint64_t> processes() const;

private:
  std::vector<std::vector<std::uint64_t>> ranks_;
};

} // namespace actorpipe::launch
