/// Partitioner `autopipe` (AutoPipe-H): balanced stages at sub-block granularity on
/// devices of different speeds and memory.
///
/// 1. The exact min-max partition: the least bound T on any stage's time (its units'
///    forward + backward divided by its device's speed) such that stages fit in their
///    devices' memory. Feasibility of a bound is a greedy scan (each stage takes as many
///    units as fit), so T comes from bisection in O(S log N) per probe.
/// 2. An even spread within T: each stage takes its speed's share of what is left,
///    as long as the rest still fits under T, so that slack is not piled on the last.
/// 3. A search guided by the simulated critical stage: simulate one pipeline under the
///    job's schedule, find the stage that is idle least, and move a unit at either of
///    its edges to the neighbour when that shortens the simulated iteration and keeps
///    every stage within 1% of T. Repeats until no move helps.
///
/// Without placement hints (the planner's first round) all stages count as speed 1 and
/// memory is not limited; the second round passes the mapped devices' speed and memory.

#include "../unit_costs.hpp"

#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include <cmath>
#include <limits>

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

class Search {
public:
  Search(const PlanContext& context, const UnitCosts& costs, bool limit_memory)
      : c_(context), costs_(costs), S_(context.stages), N_(costs.size()), limit_memory_(limit_memory) {
    for (std::size_t s = 0; s < S_; ++s) speeds_.push_back(s < c_.stage_speeds.size() ? c_.stage_speeds[s] : 1.0);
  }

  double time(std::size_t s, std::size_t i, std::size_t j) const { return costs_.compute_ms(i, j) / speeds_[s]; }
  bool fits(std::size_t s, std::size_t i, std::size_t j) const {
    if (!limit_memory_ || s >= c_.stage_memory.size()) return true;
    return partitioning::stage_memory(costs_, c_, s, i, j) <= static_cast<double>(c_.stage_memory[s]);
  }
  bool within(std::size_t s, std::size_t i, std::size_t j, double bound) const {
    return time(s, i, j) <= bound && fits(s, i, j);
  }

  /// The furthest end for stage s starting at unit i under `bound`, leaving a unit for
  /// each later stage; i when not even one unit fits.
  std::size_t furthest(std::size_t s, std::size_t i, double bound) const {
    std::size_t lo = i, hi = N_ - (S_ - s - 1); // answer in [lo, hi]
    while (lo < hi) {
      const std::size_t mid = (lo + hi + 1) / 2;
      if (within(s, i, mid, bound)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /// Whether stages s.. can hold units [i, N) under `bound`.
  bool suffix_fits(std::size_t s, std::size_t i, double bound) const {
    for (; s < S_; ++s) {
      const std::size_t j = s + 1 == S_ ? (within(s, i, N_, bound) ? N_ : i) : furthest(s, i, bound);
      if (j == i) return false;
      i = j;
    }
    return i == N_;
  }

  /// The exact min-max bound, or infinity when memory rules every partition out.
  double min_max_bound() const {
    double hi = 0;
    for (std::size_t s = 0; s < S_; ++s) hi = std::max(hi, time(s, 0, N_));
    hi *= 1.000001;
    if (!suffix_fits(0, 0, hi)) return std::numeric_limits<double>::infinity();
    double lo = 0;
    for (int iteration = 0; iteration < 100 && hi - lo > 1e-9 * hi; ++iteration) {
      const double mid = 0.5 * (lo + hi);
      (suffix_fits(0, 0, mid) ? hi : lo) = mid;
    }
    return hi;
  }

  /// Boundaries that spread the work evenly by speed, every stage within `bound`.
  std::vector<std::size_t> spread(double bound) const {
    std::vector<std::size_t> b{0};
    std::size_t i = 0;
    for (std::size_t s = 0; s + 1 < S_; ++s) {
      double speed_left = 0;
      for (std::size_t t = s; t < S_; ++t) speed_left += speeds_[t];
      const double target = costs_.compute_ms(i, N_) * speeds_[s] / speed_left;
      const std::size_t most = furthest(s, i, bound);
      // The smallest end that still lets the rest fit; more work here is allowed.
      std::size_t lo = i + 1, hi = most;
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (suffix_fits(s + 1, mid, bound)) hi = mid;
        else lo = mid + 1;
      }
      std::size_t j = lo;
      while (j < most && costs_.compute_ms(i, j + 1) <= target) ++j;
      if (j < most && std::abs(costs_.compute_ms(i, j + 1) - target) < std::abs(costs_.compute_ms(i, j) - target)) ++j;
      b.push_back(j);
      i = j;
    }
    b.push_back(N_);
    return b;
  }

  double simulate(const std::vector<std::size_t>& b, const Schedule& schedule, double send_bytes_per_ms,
                  std::size_t* critical) const {
    const double per_sample = 1.0 / costs_.micro_batch();
    std::vector<double> forward, backward, send;
    for (std::size_t s = 0; s < S_; ++s) {
      forward.push_back(costs_.forward_ms(b[s], b[s + 1]) * per_sample / speeds_[s]);
      backward.push_back(costs_.backward_ms(b[s], b[s + 1]) * per_sample / speeds_[s]);
      if (s + 1 < S_) send.push_back(costs_.boundary_bytes(b[s + 1]) * per_sample / send_bytes_per_ms);
    }
    const PipelineTiming timing = simulate_pipeline(schedule, forward, backward, send, c_.action_overhead_ms);
    if (critical) *critical = timing.critical_stage;
    return timing.makespan_ms;
  }

  /// Moves single units off the simulated critical stage while that helps.
  void improve(std::vector<std::size_t>& b, double bound) const {
    // The critical stage does not depend on how many micro-batches follow the first
    // few, so the guiding simulation is capped at 2S of them to stay cheap.
    const std::size_t m = std::min<std::size_t>(std::max<std::size_t>(c_.micro_batch_sizes.size(), 1), 2 * S_);
    const std::vector<std::uint32_t> sizes(m, costs_.micro_batch());
    const Schedule schedule = c_.scheduler == "gpipe" ? gpipe_schedule(S_, sizes) : one_f_one_b_schedule(S_, sizes);
    const auto bandwidths = partitioning::cluster_bandwidths(c_.cluster);
    const double bytes_per_ms = bandwidths.intra_server / 1000.0;
    const double limit = bound * 1.01;
    std::size_t critical = 0;
    double current = simulate(b, schedule, bytes_per_ms, &critical);
    for (std::size_t round = 0; round < 4 * S_ + 16; ++round) {
      std::vector<std::size_t> best;
      double best_time = current * (1 - 1e-9);
      std::size_t best_critical = critical;
      auto consider = [&](std::size_t boundary, bool forward) {
        std::vector<std::size_t> next = b;
        next[boundary] = forward ? next[boundary] + 1 : next[boundary] - 1;
        for (std::size_t s = 0; s < S_; ++s)
          if (next[s + 1] <= next[s] || time(s, next[s], next[s + 1]) > limit || !fits(s, next[s], next[s + 1])) return;
        std::size_t next_critical = 0;
        const double t = simulate(next, schedule, bytes_per_ms, &next_critical);
        if (t < best_time) {
          best = std::move(next);
          best_time = t;
          best_critical = next_critical;
        }
      };
      if (critical > 0) consider(critical, true);         // its first unit to the stage before
      if (critical + 1 < S_) consider(critical + 1, false); // its last unit to the stage after
      if (best.empty()) return;
      b = std::move(best);
      current = best_time;
      critical = best_critical;
    }
  }

private:
  const PlanContext& c_;
  const UnitCosts& costs_;
  std::size_t S_, N_;
  bool limit_memory_;
  std::vector<double> speeds_;
};

class AutopipePartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    if (auto s = check_options(context.options, {"search"}); !s) return std::move(s).error();
    auto search = choice_option(context.options, "search", "true", {"true", "false"});
    if (!search) return std::move(search).error();
    const UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context));
    if (auto s = partitioning::check_stage_count(costs, context, context.sub_blocks ? "blocks and sub-blocks" : "blocks"); !s)
      return std::move(s).error();

    Search with_memory(context, costs, true);
    double bound = with_memory.min_max_bound();
    // Nothing fits: balance time alone and let the planner report the overflow.
    Search plain(context, costs, false);
    const Search& used = std::isinf(bound) ? plain : with_memory;
    if (std::isinf(bound)) bound = plain.min_max_bound();
    std::vector<std::size_t> boundaries = used.spread(bound);
    if (*search == "true") used.improve(boundaries, bound);
    return costs.to_partition(boundaries);
  }
};

} // namespace

ACTORPIPE_PLUGIN(AutopipePartitioner, "autopipe", "1.0.0",
                 "AutoPipe-H: min-max balanced sub-block stages for device speeds and memory, refined by simulation")
