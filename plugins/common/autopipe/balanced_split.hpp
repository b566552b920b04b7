#pragma once

/// The exact min-max compute split of autopipe (AutoPipe-H's balanced partition): the
/// least bound T on any stage's time (its units' forward + backward divided by its
/// device's speed) such that stages fit in their devices' memory, and an even spread of
/// the work under T.
///
/// Feasibility of a bound is a greedy scan (each stage takes as many units as fit) in
/// O(S log N); T comes from a bisection whose feasible probes jump down to the greedy
/// split's largest stage and whose failing probes jump up to the least bound that
/// changes that split. Under T each stage takes its speed's share of what is left, as
/// long as the rest still fits, so that slack is not piled on the last stage; then each
/// cut slides, within T, to the unit boundary that sends the fewest bytes.

#include "common/partitioning/unit_costs.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace actorpipe::autopipe {

using partitioning::UnitCosts;

class BalancedSplit {
public:
  /// `speeds` and `memory` per stage; empty `memory` limits nothing.
  BalancedSplit(const PlanContext& context, const UnitCosts& costs, const std::vector<double>& speeds,
                std::vector<std::uint64_t> memory)
      : costs_(costs), S_(context.stages), N_(costs.size()), fits_(costs, context, std::move(memory)) {
    speeds_.resize(S_);
    for (std::size_t s = 0; s < S_; ++s)
      speeds_[s] = {speeds[s], 1.0 / speeds[s]};
  }

  /// Every comparison goes through this one product, so a bound reached by one stage
  /// time is met exactly by the same stage (a multiply, not a divide, per probe).
  double time(std::size_t s, std::size_t i, std::size_t j) const {
    return costs_.compute_ms(i, j) * speeds_[s].slowness;
  }
  bool fits(std::size_t s, std::size_t i, std::size_t j) const { return fits_(s, i, j); }
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

private:
  const UnitCosts& costs_;
  std::size_t S_, N_;
  partitioning::MemoryFit fits_;
  struct Speed {
    double speed, slowness; ///< slowness = 1 / speed
  };
  std::vector<Speed> speeds_;
};

} // namespace actorpipe::autopipe
