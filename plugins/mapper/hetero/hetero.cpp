/// Mapper `hetero` (AutoPipe-H): places stages and replicas knowing that servers differ
/// and that PCIe switches, host bridges and NICs are shared.
///
/// Devices are ranked by server, and within a server by PCIe switch, so that
/// neighbours in the ranking share a switch: fastest servers first, so that a job
/// smaller than the cluster lands on its fastest devices; roomiest first, for a job
/// whose activations the fastest devices would not hold; largest and best connected
/// first, for a job whose sends the NICs would slow; and in the cluster file's order.
/// Two layouts are laid over each ranking:
///   stage-major    the replicas of a stage take consecutive devices (a server's worth
///                  of pipelines at a time): its all-reduce stays under one switch or
///                  server as far as it can, each stage has one device kind (so a
///                  speed-aware partitioner can give faster stages more work), and only
///                  the cuts between stages cross servers;
///   pipeline-major each pipeline takes consecutive devices: neighbours share a switch
///                  or server, and the all-reduces cross servers instead.
/// Each is priced by the planner's estimate of one iteration over the cluster's links
/// (contention included), with the cuts AutoPipe-H's search gives that layout when
/// they beat the partition given, since a placement-aware partitioner re-cuts for the
/// layout in the planner's next round; a layout whose cuts fit in memory beats one
/// whose cuts do not, and the faster wins. Option `layout` fixes the layout.

#include "common/autopipe/candidate_judge.hpp"
#include "common/autopipe/cut_search.hpp"
#include "common/autopipe/iteration_search.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/plugin.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>

namespace {

using namespace actorpipe;

/// What ranks servers: their devices' mean speed; their mean memory; their links
/// (most devices, then the most NIC bandwidth: a pipeline crosses fewest and fastest
/// NICs); or nothing, the cluster file's own order.
enum class Ranking { speed, memory, links, given };

/// Devices by server, the best first by `ranking` (then by speed), then by PCIe switch.
std::vector<DeviceId> ranked_devices(const ClusterSpec& cluster, Ranking ranking) {
  std::vector<double> speed(cluster.servers.size(), 0.0), memory(cluster.servers.size(), 0.0),
      size(cluster.servers.size(), 0.0);
  for (const Device& d : cluster.devices) {
    speed[d.server] += d.speed;
    memory[d.server] += static_cast<double>(d.memory_bytes);
    ++size[d.server];
  }
  std::vector<std::pair<double, double>> key(cluster.servers.size());
  for (std::size_t s = 0; s < key.size(); ++s) {
    const double n = std::max(1.0, size[s]);
    const double nics = static_cast<double>(cluster.servers[s].nics) * cluster.servers[s].nic_bandwidth;
    switch (ranking) {
    case Ranking::speed: key[s] = {speed[s] / n, memory[s] / n}; break;
    case Ranking::memory: key[s] = {memory[s] / n, speed[s] / n}; break;
    case Ranking::links: key[s] = {size[s], nics}; break;
    case Ranking::given: key[s] = {0, 0}; break;
    }
  }
  std::vector<DeviceId> ranked(cluster.devices.size());
  std::iota(ranked.begin(), ranked.end(), DeviceId{0});
  std::stable_sort(ranked.begin(), ranked.end(), [&](DeviceId a, DeviceId b) {
    const Device& x = cluster.devices[a];
    const Device& y = cluster.devices[b];
    if (key[x.server] != key[y.server]) return key[x.server] > key[y.server];
    if (x.server != y.server) return x.server < y.server;
    if (x.pcie_switch != y.pcie_switch) return x.pcie_switch < y.pcie_switch;
    return ranking != Ranking::given && x.speed > y.speed;
  });
  return ranked;
}

enum class Layout { stage_major, pipeline_major };

/// Lays the ranked devices out by stage (a stage's replicas consecutive) or by
/// pipeline (a pipeline's stages consecutive). Stage-major goes pod by pod: pipelines
/// are taken `pod` at a time (a server's worth), and each pod lays its stages out
/// stage-major over its own devices, so that no stage's replicas straddle two servers
/// whose NICs the neighbouring stages would then share.
Mapping lay_out(const std::vector<DeviceId>& ranked, std::size_t stages, std::size_t pipelines, Layout layout,
                std::size_t pod) {
  Mapping mapping;
  mapping.devices.assign(pipelines, std::vector<DeviceId>(stages));
  for (std::size_t p = 0; p < pipelines; ++p)
    for (std::size_t s = 0; s < stages; ++s) {
      if (layout == Layout::pipeline_major) {
        mapping.devices[p][s] = ranked[p * stages + s];
        continue;
      }
      const std::size_t first = p / pod * pod; // the pod's first pipeline
      const std::size_t size = std::min(pod, pipelines - first);
      mapping.devices[p][s] = ranked[first * stages + s * size + (p - first)];
    }
  return mapping;
}

/// What a layout is worth: whether cuts for it fit its devices' memory, and the
/// planner's estimate of one iteration on it, with the better of the partition given
/// and the cuts AutoPipe-H's search finds for the layout, which a placement-aware
/// partitioner gives it in the planner's next round. Pricing every layout on the given
/// cuts alone would favour the layout they were made for. Where the pipelines of a
/// stage-major layout share lanes, the estimate is their pod's, settled from each:
/// priced by one representative in step with the others, such a layout can look a few
/// per cent slower than it is.
struct Price {
  bool fits = false;
  double ms = std::numeric_limits<double>::infinity();
  bool operator<(const Price& other) const { return fits != other.fits ? fits : ms < other.ms; }
};

/// The cuts AutoPipe-H's search gives each layout, kept across map() calls: a plan
/// maps each shape once a round (up to four rounds), over the same layouts, and a
/// layout's search reads nothing that changes between rounds (neither the partition
/// nor the placement hints), so each layout of each shape is searched once. Another
/// model, cluster or setting that the search reads (a mapper held by an embedding
/// program plans many jobs) drops every cut kept.
class SearchedCuts {
public:
  /// search_cuts(context, costs, model, true, false), `model` being the estimate of
  /// the layout `devices`.
  std::vector<std::size_t> of(const PlanContext& context, const partitioning::UnitCosts& costs, IterationModel& model,
                              const std::vector<std::vector<DeviceId>>& devices) {
    Key key{context.stages,
            context.pipelines,
            context.micro_batch_sizes,
            context.chunking.chunks,
            context.chunking.shape,
            context.scheduler,
            devices};
    {
      const std::lock_guard lock(mutex_);
      if (!job_ || !job_->matches(context)) {
        cuts_.clear();
        job_.emplace(context);
      }
      if (const auto found = cuts_.find(key); found != cuts_.end()) return found->second;
    }
    std::vector<std::size_t> cuts = autopipe::search_cuts(context, costs, model, true, false);
    const std::lock_guard lock(mutex_);
    if (job_->matches(context)) cuts_.emplace(std::move(key), cuts);
    return cuts;
  }

private:
  /// What the search reads that stays the same for every shape of one job.
  struct Job {
    explicit Job(const PlanContext& c)
        : profile(c.profile), cluster(c.cluster), action_overhead_ms(c.action_overhead_ms),
          optimizer_factor(c.optimizer_factor), sub_blocks(c.sub_blocks), recompute(c.recompute) {}
    bool matches(const PlanContext& c) const {
      return action_overhead_ms == c.action_overhead_ms && optimizer_factor == c.optimizer_factor &&
             sub_blocks == c.sub_blocks && recompute == c.recompute && profile == c.profile && cluster == c.cluster;
    }
    ModelProfile profile;
    ClusterSpec cluster;
    double action_overhead_ms, optimizer_factor;
    bool sub_blocks;
    Recompute recompute;
  };
  /// The shape, the schedule and the layout.
  using Key = std::tuple<std::size_t, std::size_t, std::vector<std::uint32_t>, std::uint32_t, ChunkShape, std::string,
                         std::vector<std::vector<DeviceId>>>;

  std::mutex mutex_;
  std::optional<Job> job_;
  std::map<Key, std::vector<std::size_t>> cuts_;
};

Price price(const PlanContext& context, const Partition& partition, const Mapping& mapping, SearchedCuts& search) {
  const partitioning::UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context),
                                      context.recompute);
  IterationModel model = autopipe::iteration_model(context, mapping.devices);
  std::vector<std::uint64_t> memory(context.stages);
  for (std::size_t s = 0; s < context.stages; ++s)
    memory[s] = model.stage_memory(s);
  const partitioning::MemoryFit fits(costs, context, memory);
  const std::vector<std::size_t> searched = search.of(context, costs, model, mapping.devices);
  // The search descended with the lanes priced at the period; the two priced here are
  // judged as autopipe judges its last candidates (every pipeline, or the pod of
  // pipelines that share the representative's lanes, or every micro-batch where the
  // lanes bind), and by the pod from its optimum near each.
  model.set_bound_lanes(BoundLanes::simulated);
  std::optional<IterationModel> judge_model = autopipe::judge_of(model);
  IterationModel& judging = judge_model ? *judge_model : model;
  const bool pod = judge_model && !judge_model->exact();
  autopipe::IterationSearch judge(context, costs, judging, partitioning::MemoryFit(costs, context, {}), 2);
  auto fit = [&](const std::vector<std::size_t>& b) {
    for (std::size_t s = 0; s < context.stages; ++s)
      if (!fits(s, b[s], b[s + 1])) return false;
    return true;
  };
  // Descent keeps every stage it moves within memory: a split that fits goes on fitting.
  // From both: a few units from either, the pod's optimum can be a basin away.
  const std::vector<std::size_t> given = costs.to_boundaries(partition);
  Price best;
  for (const std::vector<std::size_t>* start : {&given, &searched}) {
    if (start == &searched && searched == given) break;
    std::vector<std::size_t> b = *start;
    Price p{fit(b), judge.time(b)};
    if (pod) autopipe::settle(context, costs, judging, fits, b, p.ms, autopipe::descent_evaluations(context.stages));
    best = std::min(best, p);
  }
  return best;
}

class HeteroMapper : public Mapper {
public:
  Result<Mapping> map(const PlanContext& context, const Partition& partition) override {
    ACTORPIPE_TRY(check_options(context.options, {"layout"}));
    auto layout = choice_option(context.options, "layout", "auto", {"auto", "stage-major", "pipeline-major"});
    ACTORPIPE_TRY(layout);
    const std::size_t needed = context.pipelines * context.stages;
    if (needed > context.cluster.devices.size())
      return Error::bad_input(std::to_string(context.pipelines) + " pipelines × " + std::to_string(context.stages) +
                              " stages need " + std::to_string(needed) + " devices; cluster '" + context.cluster.name +
                              "' has " + std::to_string(context.cluster.devices.size()));
    std::vector<Layout> layouts{Layout::stage_major, Layout::pipeline_major};
    if (*layout == "stage-major") layouts = {Layout::stage_major};
    if (*layout == "pipeline-major" || context.pipelines == 1 || context.stages == 1)
      layouts = {Layout::pipeline_major};
    std::vector<Mapping> candidates;
    std::vector<std::vector<DeviceId>> used; // the devices each ranking gives the job, in order
    for (const Ranking ranking : {Ranking::speed, Ranking::memory, Ranking::links, Ranking::given}) {
      const std::vector<DeviceId> ranked = ranked_devices(context.cluster, ranking);
      std::vector<DeviceId> taken(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(needed));
      if (std::find(used.begin(), used.end(), taken) != used.end()) continue;
      used.push_back(std::move(taken));
      const std::size_t pod =
          std::max<std::size_t>(1, context.cluster.devices_of(context.cluster.devices[ranked.front()].server).size());
      for (const Layout l : layouts)
        candidates.push_back(lay_out(ranked, context.stages, context.pipelines, l, pod));
    }
    if (candidates.size() == 1) return candidates.front();
    std::size_t best = 0;
    Price least;
    for (std::size_t c = 0; c < candidates.size(); ++c)
      if (const Price p = price(context, partition, candidates[c], searched_); c == 0 || p < least) least = p, best = c;
    return candidates[best];
  }

private:
  SearchedCuts searched_;
};

} // namespace

ACTORPIPE_PLUGIN(HeteroMapper, "hetero", "1.0.0",
                 "fastest, roomiest or best-connected servers first; stage- or pipeline-major, whichever fits and the "
                 "simulated links favour")
