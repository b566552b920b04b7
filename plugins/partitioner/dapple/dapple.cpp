/// Partitioner `dapple`: DAPPLE's planner (Fan et al., PPoPP 2021) for a plan where every
/// stage has the plan's pipeline count of replicas.
///
/// DAPPLE minimises the latency of one synchronous 1F1B iteration,
///   L = Σ_s (F_s + B_s) + Σ_cuts 2 c_k + (M − 1) · (F_Q + B_Q) + AR_0,
/// where the pivot Q is the stage of most work per micro-batch, c_k a cut's transfer
/// time and AR_0 the first stage's gradient all-reduce, which nothing overlaps. It
/// tries its three device placement policies for where replicas and neighbours land:
///   fresh_first   each stage takes devices of fresh servers: replicas share a server,
///                 neighbours talk across servers;
///   append_first  stages fill a server before the next: neighbours mostly share one;
///   scatter_first replicas spread over servers: neighbours share one, replicas do not.
/// For each policy a dynamic programme over (stages, layers) keeps, per state, the
/// prefix whose latency so far is least, weighing the pivot term with M − 1; the
/// policy with the least total latency wins. Layers are whole blocks; devices are taken
/// as identical. O(3 · S · N²); where that passes a budget (chains of thousands of
/// blocks), the programme runs over groups of consecutive blocks first and then moves
/// each cut within the groups beside it (partitioning::coarse_to_fine).

#include "common/partitioning/split_programme.hpp"

#include <limits>

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

struct Prefix {
  double sum = 0;   ///< work + cuts so far
  double pivot = 0; ///< most work of one stage
  double allreduce_first = 0;
  double latency(double weight) const { return sum + weight * pivot; }
};

class DapplePartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {"placement"}));
    auto placement =
        choice_option(context.options, "placement", "best", {"best", "fresh_first", "append_first", "scatter_first"});
    ACTORPIPE_TRY(placement);
    const UnitCosts costs(context.profile, false, partitioning::largest_micro_batch(context));
    ACTORPIPE_TRY(partitioning::check_stage_count(costs, context, "blocks"));

    double best_latency = std::numeric_limits<double>::infinity();
    std::vector<std::size_t> best;
    const double searches = *placement == "best" ? 3.0 : 1.0;
    double searched = 0;
    for (const char* policy : {"fresh_first", "append_first", "scatter_first"}) {
      if (*placement != "best" && *placement != policy) continue;
      double latency = 0;
      // Each policy's search is an equal share of the progress.
      const auto progress = [&context, searched, searches](double f) { context.report((searched + f) / searches); };
      std::vector<std::size_t> boundaries = plan(context, costs, policy, latency, progress);
      ++searched;
      if (latency < best_latency) {
        best_latency = latency;
        best = std::move(boundaries);
      }
    }
    return costs.to_partition(best);
  }

private:
  static std::vector<std::size_t> plan(const PlanContext& context, const UnitCosts& costs, const std::string& policy,
                                       double& latency, const std::function<void(double)>& progress) {
    const std::size_t S = context.stages, P = context.pipelines;
    const double weight = static_cast<double>(std::max<std::size_t>(context.micro_batch_sizes.size(), 1)) - 1.0;
    const auto bw = partitioning::cluster_bandwidths(context.cluster);
    const std::size_t per_server = bw.devices_per_server;
    // Which link the cut after stage s (0-based) crosses, worked out once: the
    // programme asks in its innermost loop.
    std::vector<double> cut_bandwidth(S);
    for (std::size_t s = 0; s < S; ++s)
      if (policy == "fresh_first")
        cut_bandwidth[s] = bw.inter_server;
      else if (policy == "scatter_first")
        cut_bandwidth[s] = bw.intra_server;
      else // append_first: stage s occupies devices [s·P, (s+1)·P) in server order.
        cut_bandwidth[s] =
            ((s + 1) * P - 1) / per_server == ((s + 1) * P) / per_server ? bw.intra_server : bw.inter_server;
    const bool scattered = policy == "scatter_first" && context.cluster.servers.size() > 1;
    const double ring_bandwidth = scattered || P > per_server ? bw.inter_server : bw.intra_server;

    const auto extend = [&](const Prefix& before, std::size_t s, std::size_t i, std::size_t j) {
      const double work = costs.compute_ms(i, j);
      // The link of the cut before stage s.
      const double cut = i > 0 ? 2.0 * costs.boundary_bytes(i) / cut_bandwidth[s - 1] * 1000.0 : 0.0;
      Prefix next;
      next.sum = before.sum + work + cut;
      next.pivot = std::max(before.pivot, work);
      next.allreduce_first =
          s == 0 ? partitioning::allreduce_ms(costs.parameter_bytes(i, j), P, ring_bandwidth) : before.allreduce_first;
      return std::optional<Prefix>(next);
    };
    const auto better = [weight](const Prefix& a, const Prefix& b) {
      return a.latency(weight) + a.allreduce_first < b.latency(weight) + b.allreduce_first;
    };
    const Prefix start;
    std::vector<std::size_t> boundaries = partitioning::coarse_to_fine(
        costs, S,
        [&](const partitioning::CutCandidates& candidates, const std::function<void(double)>& report) {
          return partitioning::best_split(candidates, start, extend, better, report);
        },
        progress);
    // The found split's latency, added up again stage by stage.
    Prefix total = start;
    for (std::size_t s = 0; s < S; ++s)
      total = *extend(total, s, boundaries[s], boundaries[s + 1]);
    latency = total.latency(weight) + total.allreduce_first;
    return boundaries;
  }
};

} // namespace

ACTORPIPE_PLUGIN(DapplePartitioner, "dapple", "1.0.0",
                 "DAPPLE's planner: least 1F1B latency over its three device placement policies")
