/// Partitioner `pipedream`: PipeDream's dynamic programme (Narayanan et al., SOSP 2019)
/// over layers, for a plan where every stage has the same replication (the plan's
/// pipeline count).
///
/// PipeDream prices a stage of layers i..j replicated r times as
///   T(i, j, r) = max(compute(i..j), sync(i..j, r)) / r,
///   sync = 4 (r − 1) · |w(i..j)| / (r · B)      (parameter-server style weight sync),
/// a cut after layer j as 2 · a_j / B' (activations forward, gradients back), and
/// minimises the slowest of all stages and cuts:
///   A(j, s) = min_i max(A(i, s − 1), 2 a_i / B', T(i + 1..j, r)).
/// Bandwidths come from the cluster's first server: replicas beyond one server sync
/// over the network, and consecutive stages are neighbours on a server. Layers are
/// whole blocks, as PipeDream's profiles know no finer grain. It assumes identical
/// devices. The programme is O(S · N²); its answer is found exactly in O(64 · S · N)
/// (partitioning::min_max_split_monotone).

#include "common/partitioning/split_programme.hpp"

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

class PipedreamPartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const UnitCosts costs(context.profile, false, partitioning::largest_micro_batch(context));
    ACTORPIPE_TRY(partitioning::check_stage_count(costs, context, "blocks"));
    const std::size_t N = costs.size(), S = context.stages;
    const std::size_t r = context.pipelines;
    const auto bw = partitioning::cluster_bandwidths(context.cluster);
    const double sync_bandwidth = r <= bw.devices_per_server ? bw.intra_server : bw.inter_server;
    const double cut_bandwidth = bw.intra_server;

    auto stage = [&](std::size_t i, std::size_t j) {
      const double sync = r > 1 ? 4.0 * (r - 1) * costs.parameter_bytes(i, j) / (r * sync_bandwidth) * 1000.0 : 0.0;
      return std::max(costs.compute_ms(i, j), sync) / r;
    };
    auto cut = [&](std::size_t j) { return 2.0 * costs.boundary_bytes(j) / cut_bandwidth * 1000.0; };

    // Stage costs are sums, which a longer stage never lowers: the bisection finds the
    // programme's answer in O(S · N) a round instead of O(S · N²).
    const auto boundaries = partitioning::min_max_split_monotone(S, N, stage, cut, context.progress);
    return costs.to_partition(boundaries);
  }
};

} // namespace

ACTORPIPE_PLUGIN(PipedreamPartitioner, "pipedream", "1.0.0",
                 "PipeDream's dynamic programme over layers: slowest stage or cut, with weight sync")
