/// Partitioner `piper`: Piper's dynamic programme (Tarnawski et al., NeurIPS 2021) over
/// contiguous segments of a layer chain, with data-parallel replicas, activation
/// recomputation and device memory limits, for a plan where every stage has the plan's
/// pipeline count of replicas.
///
/// Piper minimises the time per sample of the slowest stage. A stage of layers i..j at
/// position s of S, replicated d times, runs with or without recomputation:
///   time   = F + B (+ F again when recomputing) + its cuts in and out
///            + AR(|w|, d) / M               (the all-reduce, amortised over M micro-batches)
///   memory = |w| · (1 + optimizer) + stash · in_flight(s)
///            (recomputing stashes only the stage's input instead of every activation)
/// and a configuration is allowed only when its memory fits the smallest device.
///   dp[s][j] = min over i and recompute of max(dp[s − 1][i], time(i..j, s, recompute)).
/// Layers are whole blocks; devices are taken as identical. O(2 · S · N²); where that
/// passes a budget (chains of thousands of blocks), the programme runs over groups of
/// consecutive blocks first and then moves each cut within the groups beside it
/// (partitioning::coarse_to_fine).

#include "common/partitioning/split_programme.hpp"

#include <vector>

#include <limits>

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

class PiperPartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const UnitCosts costs(context.profile, false, partitioning::largest_micro_batch(context));
    ACTORPIPE_TRY(partitioning::check_stage_count(costs, context, "blocks"));
    const std::size_t N = costs.size(), S = context.stages, d = context.pipelines;
    const double M = static_cast<double>(std::max<std::size_t>(context.micro_batch_sizes.size(), 1));
    const auto bw = partitioning::cluster_bandwidths(context.cluster);
    const double ring_bandwidth = d <= bw.devices_per_server ? bw.intra_server : bw.inter_server;
    std::uint64_t memory = std::numeric_limits<std::uint64_t>::max();
    for (const Device& device : context.cluster.devices)
      memory = std::min(memory, device.memory_bytes);

    auto cut_ms = [&](std::size_t j) {
      return j == 0 || j == N ? 0.0 : 2.0 * costs.boundary_bytes(j) / bw.intra_server * 1000.0;
    };
    // Micro-batches each stage stashes, found once: the search asks for them per split.
    std::vector<double> in_flight_of(S);
    for (std::size_t s = 0; s < S; ++s)
      in_flight_of[s] = static_cast<double>(partitioning::in_flight(context, s));
    // The least time of stage s over units [i, j) among the configurations that fit.
    auto stage = [&](std::size_t s, std::size_t i, std::size_t j) {
      const double weights = costs.parameter_bytes(i, j) * (1.0 + context.optimizer_factor);
      const double in_flight = in_flight_of[s];
      const double base = costs.compute_ms(i, j) + cut_ms(i) + cut_ms(j) +
                          partitioning::allreduce_ms(costs.parameter_bytes(i, j), d, ring_bandwidth) / M;
      double best = std::numeric_limits<double>::infinity();
      if (weights + costs.stash_bytes(i, j) * in_flight <= static_cast<double>(memory))
        best = base;
      else if (weights + costs.boundary_bytes(i) * in_flight <= static_cast<double>(memory))
        best = base + costs.forward_ms(i, j); // recompute the forward before the backward
      return best;
    };

    const auto split = [&](const auto& cost, const std::function<void(double)>& progress) {
      return partitioning::coarse_to_fine(
          costs, S,
          [&](const partitioning::CutCandidates& candidates, const std::function<void(double)>& report) {
            return partitioning::min_max_split(candidates, cost, report);
          },
          progress);
    };
    auto boundaries = split(stage, context.progress);
    // Nothing fits even with recomputation: balance time alone, so that the planner can
    // say which stage overflows which device.
    if (boundaries.empty())
      boundaries = split([&](std::size_t, std::size_t i, std::size_t j) { return costs.compute_ms(i, j); }, {});
    return costs.to_partition(boundaries);
  }
};

} // namespace

ACTORPIPE_PLUGIN(PiperPartitioner, "piper", "1.0.0",
                 "Piper's dynamic programme: slowest stage per sample with replicas, recomputation and memory limits")
