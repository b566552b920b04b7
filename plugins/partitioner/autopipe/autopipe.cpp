/// Partitioner `autopipe` (AutoPipe-H): balanced stages at sub-block granularity on
/// devices of different speeds and memory.
///
/// 1. The exact min-max partition: the least bound T on any stage's time (its units'
///    forward + backward divided by its device's speed) such that stages fit in their
///    devices' memory. Feasibility of a bound is a greedy scan (each stage takes as many
///    units as fit) in O(S log N); T comes from a bisection whose feasible probes jump
///    down to the greedy split's largest stage and whose failing probes jump up to the
///    least bound that changes that split.
/// 2. An even spread within T: each stage takes its speed's share of what is left,
///    as long as the rest still fits under T, so that slack is not piled on the last;
///    then each cut slides, within T, to the unit boundary that sends the fewest bytes.
/// 3. A search guided by the simulated critical stage: the stage that is idle least in
///    a simulated iteration of one pipeline under the job's schedule gives a unit at
///    either edge to its neighbour when that shortens the simulated iteration and
///    keeps every stage within 1% of T. Repeats until no move helps. A closed-form
///    estimate screens each move first, so only promising moves are simulated.
///
/// Without placement hints (the planner's first round) all stages count as speed 1 and
/// memory is not limited; the second round passes the mapped devices' speed and memory.

#include "../unit_costs.hpp"

#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include <cmath>
#include <limits>
#include <optional>

namespace {

using namespace actorpipe;
using partitioning::UnitCosts;

class Search {
public:
  Search(const PlanContext& context, const UnitCosts& costs, bool limit_memory)
      : c_(context), costs_(costs), S_(context.stages), N_(costs.size()), limit_memory_(limit_memory) {
    speeds_.resize(S_);
    for (std::size_t s = 0; s < S_; ++s) {
      const double speed = s < c_.stage_speeds.size() ? c_.stage_speeds[s] : 1.0;
      speeds_[s] = {speed, 1.0 / speed};
    }
  }

  /// Every comparison goes through this one product, so a bound reached by one stage
  /// time is met exactly by the same stage (a multiply, not a divide, per probe).
  double time(std::size_t s, std::size_t i, std::size_t j) const {
    return costs_.compute_ms(i, j) * speeds_[s].slowness;
  }
  bool fits(std::size_t s, std::size_t i, std::size_t j) const {
    if (!limit_memory_ || s >= c_.stage_memory.size()) return true;
    return partitioning::stage_memory(costs_, c_, s, i, j) <= static_cast<double>(c_.stage_memory[s]);
  }
  bool within(std::size_t s, std::size_t i, std::size_t j, double bound) const {
    return time(s, i, j) <= bound && fits(s, i, j);
  }

  /// The furthest end for stage s starting at unit i under `bound`, leaving a unit for
  /// each later stage; i when not even one unit fits. Gallops from i, so a stage of k
  /// units costs O(log k) probes: stages are short when there are many.
  std::size_t furthest(std::size_t s, std::size_t i, double bound) const {
    const std::size_t last = N_ - (S_ - s - 1);
    std::size_t lo = i, k = 1; // lo: an end known to fit (or i); probes i + 1, i + 2, i + 4, ...
    while (i + k <= last && within(s, i, i + k, bound))
      lo = i + k, k *= 2;
    std::size_t hi = std::min(last, i + k - 1); // answer in [lo, hi]
    while (lo < hi) {
      const std::size_t mid = (lo + hi + 1) / 2;
      if (within(s, i, mid, bound))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  /// A greedy split under a bound (each stage takes as many units as fit).
  struct Probe {
    double reached; ///< its largest stage time; infinity when the units do not all fit
    /// When they do not: the least bound under which one of its stages could take one
    /// more unit. Below it the greedy split is the same, so the optimum is no lower.
    double next;
    bool fits() const { return !std::isinf(reached); }
  };
  Probe greedy(double bound) const {
    constexpr double none = std::numeric_limits<double>::infinity();
    std::size_t i = 0;
    double largest = 0, next = none;
    for (std::size_t s = 0; s < S_; ++s) {
      const bool final = s + 1 == S_;
      const std::size_t last = N_ - (S_ - s - 1);
      const std::size_t j = final ? (within(s, i, N_, bound) ? N_ : i) : furthest(s, i, bound);
      // The last stage can only grow to hold everything left.
      if (const std::size_t grown = final ? N_ : j + 1; j < last && fits(s, i, grown))
        next = std::min(next, time(s, i, grown));
      if (j == i) return {none, next};
      largest = std::max(largest, time(s, i, j));
      i = j;
    }
    return {largest, none};
  }

  /// The exact min-max bound, or infinity when memory rules every partition out.
  /// The lower end starts at the floor and only ever rises to a probe's `next`; each
  /// round probes it (when it fits, it is the optimum) and bisects towards the upper
  /// end, which falls to the largest stage a fitting probe reached. Both ends are
  /// stage times, so a few rounds settle it exactly.
  double min_max_bound() const {
    double speed_sum = 0, fastest = 0, slowest_unit = 0;
    for (std::size_t s = 0; s < S_; ++s)
      speed_sum += speeds_[s].speed, fastest = std::max(fastest, speeds_[s].speed);
    for (std::size_t u = 0; u < N_; ++u)
      slowest_unit = std::max(slowest_unit, costs_.compute_ms(u, u + 1));
    // Often the floor itself is reached (one unit outweighs a fair share, or the work
    // divides evenly): the first probe settles it.
    double lo = std::max(costs_.compute_ms(0, N_) / speed_sum, slowest_unit / fastest);
    double hi = std::numeric_limits<double>::infinity();
    while (lo < hi) {
      const Probe at_lo = greedy(lo);
      if (at_lo.fits()) return at_lo.reached;
      lo = at_lo.next;
      if (lo >= hi) break;
      const Probe at_mid = greedy(std::isinf(hi) ? 2 * lo : 0.5 * (lo + hi));
      if (at_mid.fits())
        hi = at_mid.reached;
      else
        lo = std::max(lo, at_mid.next);
    }
    return hi;
  }

  /// Per stage, the earliest unit at which stages s.. can still hold the rest under
  /// `bound` (a backward greedy: each later stage takes as many units as fit),
  /// galloping down from the stage's end as `furthest` gallops up.
  std::vector<std::size_t> earliest_starts(double bound) const {
    std::vector<std::size_t> start(S_ + 1, N_);
    for (std::size_t s = S_; s-- > 0;) {
      const std::size_t end = start[s + 1];
      // Leave one unit for each earlier stage; end - 1 always fits when feasible.
      std::size_t hi = end - 1, step = 1; // hi: a start known to fit
      while (hi >= s + step && within(s, hi - step, end, bound))
        hi -= step, step *= 2;
      std::size_t lo = hi >= s + step ? hi - step + 1 : s; // answer in [lo, hi]
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (within(s, mid, end, bound))
          hi = mid;
        else
          lo = mid + 1;
      }
      start[s] = lo;
    }
    return start;
  }

  /// Boundaries that spread the work evenly by speed, every stage within `bound`.
  std::vector<std::size_t> spread(double bound) const {
    // b starts as the earliest starts and becomes the cuts: stage s reads b[s + 1]
    // just before it overwrites it.
    std::vector<std::size_t> b = earliest_starts(bound);
    double speed_left = 0;
    for (std::size_t s = 0; s < S_; ++s)
      speed_left += speeds_[s].speed;
    b[0] = 0;
    std::size_t i = 0;
    for (std::size_t s = 0; s + 1 < S_; ++s) {
      const double target = costs_.compute_ms(i, N_) * speeds_[s].speed / speed_left;
      speed_left -= speeds_[s].speed;
      // The smallest end that still lets the rest fit, then more work up to the target
      // or the bound, whichever comes first (growing stays feasible until `within` fails).
      const std::size_t last = N_ - (S_ - s - 1);
      std::size_t j = std::max(i + 1, b[s + 1]);
      while (j < last && costs_.compute_ms(i, j + 1) <= target && within(s, i, j + 1, bound))
        ++j;
      if (j < last && std::abs(costs_.compute_ms(i, j + 1) - target) < std::abs(costs_.compute_ms(i, j) - target) &&
          within(s, i, j + 1, bound))
        ++j;
      b[s + 1] = j;
      i = j;
    }
    return b;
  }

  /// Moves each cut, within the room its two stages have under `bound`, to the unit
  /// boundary that sends the fewest bytes: the largest stage stays at the optimum and
  /// the pipeline's fill, drain and round trips carry less. Two sweeps settle it.
  void quiet_cuts(std::vector<std::size_t>& b, double bound) const {
    for (int sweep = 0; sweep < 2; ++sweep) {
      bool moved = false;
      for (std::size_t s = 1; s < S_; ++s) {
        if (b[s + 1] - b[s - 1] < 3) continue; // two stages of one unit each: nowhere to go
        std::size_t best = b[s];
        for (std::size_t j = b[s - 1] + 1; j < b[s + 1]; ++j)
          if (costs_.boundary_bytes(j) < costs_.boundary_bytes(best) && within(s - 1, b[s - 1], j, bound) &&
              within(s, j, b[s + 1], bound))
            best = j;
        moved |= best != b[s];
        b[s] = best;
      }
      if (!moved) return;
    }
  }

  /// The stage busiest in a simulated iteration: the one of most compute, since busy
  /// time is compute plus a per-action overhead that every stage pays alike.
  std::size_t critical_stage(const std::vector<std::size_t>& b) const {
    std::size_t critical = 0;
    for (std::size_t s = 1; s < S_; ++s)
      if (time(s, b[s], b[s + 1]) > time(critical, b[critical], b[critical + 1])) critical = s;
    return critical;
  }

  double simulate(const std::vector<std::size_t>& b, const Schedule& schedule, double send_bytes_per_ms) const {
    const double per_sample = 1.0 / costs_.micro_batch();
    std::vector<double> forward, backward, send;
    for (std::size_t s = 0; s < S_; ++s) {
      forward.push_back(costs_.forward_ms(b[s], b[s + 1]) * per_sample * speeds_[s].slowness);
      backward.push_back(costs_.backward_ms(b[s], b[s + 1]) * per_sample * speeds_[s].slowness);
      if (s + 1 < S_) send.push_back(costs_.boundary_bytes(b[s + 1]) * per_sample / send_bytes_per_ms);
    }
    return simulate_pipeline(schedule, forward, backward, send, c_.action_overhead_ms).makespan_ms;
  }

  /// One pipeline's iteration in closed form: the fill and drain (every stage's work and
  /// every send once) plus m − 1 rounds of the slowest stage. Only a screen: moves keep
  /// the total work, so it weighs the slowest stage against the bytes the cuts send.
  double estimate(const std::vector<std::size_t>& b, std::size_t m, double send_bytes_per_ms) const {
    const double overhead = 2 * c_.action_overhead_ms;
    double fill = 0, slowest = 0;
    for (std::size_t s = 0; s < S_; ++s) {
      const double stage = time(s, b[s], b[s + 1]) + overhead;
      fill += stage;
      slowest = std::max(slowest, stage);
      if (s + 1 < S_) fill += 2 * costs_.boundary_bytes(b[s + 1]) / send_bytes_per_ms;
    }
    return fill + static_cast<double>(m - 1) * slowest;
  }

  /// Moves single units off the critical stage while that shortens the simulated
  /// iteration. Simulates only when a move is allowed at all: a critical stage of one
  /// unit, or neighbours with no room under the bound, end the search at once.
  void improve(std::vector<std::size_t>& b, double bound) const {
    const double limit = bound * 1.01;
    // Every stage starts within the bound, so a move that sets cut k to `value` need
    // only check the two stages beside that cut.
    auto allowed = [&](std::size_t k, std::size_t value) {
      return b[k - 1] < value && value < b[k + 1] && time(k - 1, b[k - 1], value) <= limit &&
             time(k, value, b[k + 1]) <= limit && fits(k - 1, b[k - 1], value) && fits(k, value, b[k + 1]);
    };
    // The critical stage does not depend on how many micro-batches follow the first
    // few, so the guiding simulation is capped at 2S of them to stay cheap.
    const std::size_t m = std::min<std::size_t>(std::max<std::size_t>(c_.micro_batch_sizes.size(), 1), 2 * S_);
    std::optional<Schedule> schedule;
    double bytes_per_ms = 0, current = 0; // set with the schedule, once a move is possible
    for (std::size_t round = 0; round < 4 * S_ + 16; ++round) {
      const std::size_t critical = critical_stage(b);
      if (b[critical + 1] - b[critical] < 2) return; // a single unit has nothing to give
      // Its first unit to the stage before (cut `critical` moves up), or its last unit
      // to the stage after (cut `critical + 1` moves down).
      struct Move {
        std::size_t cut, value;
      };
      Move moves[2];
      std::size_t count = 0;
      if (critical > 0 && allowed(critical, b[critical] + 1)) moves[count++] = {critical, b[critical] + 1};
      if (critical + 1 < S_ && allowed(critical + 1, b[critical + 1] - 1))
        moves[count++] = {critical + 1, b[critical + 1] - 1};
      if (count == 0) return;
      // Keep only the moves the closed form expects to help.
      if (bytes_per_ms == 0) bytes_per_ms = partitioning::cluster_bandwidths(c_.cluster).intra_server / 1000.0;
      const double now = estimate(b, m, bytes_per_ms);
      std::size_t kept_moves = 0;
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t kept = b[moves[k].cut];
        b[moves[k].cut] = moves[k].value;
        if (estimate(b, m, bytes_per_ms) < now) moves[kept_moves++] = moves[k];
        b[moves[k].cut] = kept;
      }
      count = kept_moves;
      if (count == 0) return;
      if (!schedule) {
        const std::vector<std::uint32_t> sizes(m, costs_.micro_batch());
        schedule = c_.scheduler == "gpipe" ? gpipe_schedule(S_, sizes) : one_f_one_b_schedule(S_, sizes);
        current = simulate(b, *schedule, bytes_per_ms);
      }
      double best_time = current * (1 - 1e-9);
      std::size_t best = count;
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t kept = b[moves[k].cut];
        b[moves[k].cut] = moves[k].value;
        if (const double t = simulate(b, *schedule, bytes_per_ms); t < best_time) best_time = t, best = k;
        b[moves[k].cut] = kept;
      }
      if (best == count) return;
      b[moves[best].cut] = moves[best].value;
      current = best_time;
    }
  }

private:
  const PlanContext& c_;
  const UnitCosts& costs_;
  std::size_t S_, N_;
  bool limit_memory_;
  struct Speed {
    double speed, slowness; ///< slowness = 1 / speed
  };
  std::vector<Speed> speeds_;
};

class AutopipePartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {"search"}));
    auto search = choice_option(context.options, "search", "true", {"true", "false"});
    ACTORPIPE_TRY(search);
    const UnitCosts costs(context.profile, context.sub_blocks, partitioning::largest_micro_batch(context));
    ACTORPIPE_TRY(
        partitioning::check_stage_count(costs, context, context.sub_blocks ? "blocks and sub-blocks" : "blocks"));

    std::optional<Search> used(std::in_place, context, costs, true);
    double bound = used->min_max_bound();
    if (std::isinf(bound)) {
      // Nothing fits: balance time alone and let the planner report the overflow.
      used.emplace(context, costs, false);
      bound = used->min_max_bound();
    }
    std::vector<std::size_t> boundaries = used->spread(bound);
    used->quiet_cuts(boundaries, bound);
    if (*search == "true") used->improve(boundaries, bound);
    return costs.to_partition(boundaries);
  }
};

} // namespace

ACTORPIPE_PLUGIN(AutopipePartitioner, "autopipe", "1.0.0",
                 "AutoPipe-H: min-max balanced sub-block stages for device speeds and memory, refined by simulation")
