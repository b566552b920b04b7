#pragma once

/// The split that minimises the largest stage cost when each stage also pays for the
/// sends at its two cuts:
///   cost_s(i, j) = compute(i, j) / speed_s + w · (send_s(i) + send_{s+1}(j)),
/// send_s(i) being one micro-batch's activations across the cut before stage s at unit
/// boundary i (nothing at the model's two ends). With w = 1 its optimum bounds a 1F1B
/// pipeline's steady state from above: two neighbours that exchange activations and
/// gradients alternate forwards and backwards, so each round trip over their cut
/// delays both; smaller w trusts more of the sends to overlap compute.
///
/// The bound is found by bisection. A bound is feasible when the stages can reach the
/// model's end: stage s can end at j when some start i that stage s − 1 could end at
/// has cost_s(i, j) within it and fits in memory. Writing compute(i, j) as the prefix
/// sums C(j) − C(i), the best start for j is the least of w · send_s(i) − C(i) / speed_s
/// over the starts within the bound and memory: one StageSweep per bound, O(S · N), and
/// near the least bound about O(N).

#include "common/autopipe/stage_ends.hpp"
#include "common/autopipe/stage_sweep.hpp"
#include "common/autopipe/start_queue.hpp"
#include "common/partitioning/unit_costs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace actorpipe::autopipe {

/// Inputs as functions, so that the search needs nothing but these:
///   slowness(s)     1 / the speed of stage s
///   fits(s, i, j)   whether units [i, j) fit stage s's memory (shrinking keeps fitting)
///   send(s, i)      ms for one micro-batch across the cut before stage s (s ≥ 1) at i
template <class Slowness, class Fits, class Send> class SendAwareSplit {
public:
  SendAwareSplit(const partitioning::UnitCosts& costs, std::size_t stages, Slowness slowness, Fits fits, Send send)
      : costs_(costs), S_(stages), N_(costs.size()), slowness_(slowness), fits_(fits), send_(send),
        sweep_(costs, stages) {}

  /// Stage s's cost with sends weighed by w.
  double cost(std::size_t s, std::size_t i, std::size_t j, double w) const {
    return costs_.compute_ms(i, j) * slowness_(s) + w * (in(s, i) + out(s, j));
  }
  double largest(const std::vector<std::size_t>& b, double w) const {
    double most = 0;
    for (std::size_t s = 0; s < S_; ++s)
      most = std::max(most, cost(s, b[s], b[s + 1], w));
    return most;
  }

  /// The boundaries of a split whose largest cost is within `relative` of the least
  /// (`start`, a split that fits, seeds the upper end; `floor` is a known lower
  /// bound, such as the compute-only optimum). Returns `start` when nothing better fits.
  std::vector<std::size_t> solve(const std::vector<std::size_t>& start, double floor, double w,
                                 double relative = 1e-4) {
    std::vector<std::size_t> best = start;
    double hi = largest(start, w), lo = std::min(floor, hi);
    for (int round = 0; round < 48 && hi - lo > relative * hi; ++round) {
      const double mid = 0.5 * (lo + hi);
      if (std::vector<std::size_t> b = within(mid, w); !b.empty()) {
        best = std::move(b);
        hi = largest(best, w); // at most mid: the probe's split reaches a real cost
      } else {
        lo = mid;
      }
    }
    return best;
  }

  /// A split under `bound` (feasible, as from solve()) that spreads the work evenly:
  /// each stage takes its speed's share of the compute left, as far as the stages after
  /// it can still finish under the bound, so that slack is not piled on a few.
  std::vector<std::size_t> spread(double bound, double w) {
    // The sweep adds costs up from prefix sums, in another order than cost(): a split's
    // own largest cost, handed in as the bound, may come out a rounding above it.
    bound *= 1 + 1e-12;
    // finish[s · (N + 1) + i]: stages s.. can hold units [i, N) under the bound. As
    // in within(), backwards: stage s can start at i when some end j in the window
    // (i, furthest end that fits] where stages s + 1.. can start has the least
    // C(j) / speed + w · send(j) small enough; the window only moves left as i does.
    // The forward pass below reads finish only where the stages before can reach
    // (stage_ends.hpp); the starts past that, and those short of where the stages
    // after can finish from, are left at 0 unasked.
    std::vector<char> finish((S_ + 1) * (N_ + 1), 0);
    finish[S_ * (N_ + 1) + N_] = 1;
    const std::vector<std::size_t> least = least_ends(costs_, S_, bound, slowness_);
    const std::vector<std::size_t> furthest = furthest_ends(costs_, S_, bound, slowness_);
    StartQueue queue(N_ + 1); // ends, in this backward sweep
    for (std::size_t s = S_; s-- > 0;) {
      queue.clear();
      const double slow = slowness_(s);
      const char* after = &finish[(s + 1) * (N_ + 1)];
      std::size_t high = N_ - (S_ - s - 1); // the furthest end that fits, for the current start
      const bool roomy = fits_(s, s, high); // where the widest range fits, every window does
      const std::size_t lowest = std::max(s, s == 0 ? 0 : least[s - 1]);
      for (std::size_t i = std::min(high, furthest[s]); i-- > lowest;) {
        const std::size_t j = i + 1; // a new candidate end
        if (after[j]) queue.push(j, prefix(j) * slow + w * out(s, j));
        while (!roomy && high > j && !fits_(s, i, high))
          --high;
        queue.drop_above(high);
        if (!queue.empty() && queue.best_key() - prefix(i) * slow + w * in(s, i) <= bound) finish[s * (N_ + 1) + i] = 1;
      }
    }
    if (!finish[0]) return {};
    double speed_left = 0;
    for (std::size_t s = 0; s < S_; ++s)
      speed_left += 1.0 / slowness_(s);
    std::vector<std::size_t> b(S_ + 1, N_);
    b[0] = 0;
    for (std::size_t s = 0; s + 1 < S_; ++s) {
      const std::size_t i = b[s];
      const double speed = 1.0 / slowness_(s);
      const double target = costs_.compute_ms(i, N_) * speed / speed_left;
      speed_left -= speed;
      std::size_t chosen = N_;
      for (std::size_t j = i + 1; j + (S_ - s - 1) <= N_; ++j) {
        if (!fits_(s, i, j) || costs_.compute_ms(i, j) * slowness_(s) > bound) break;
        if (!finish[(s + 1) * (N_ + 1) + j] || cost(s, i, j, w) > bound) continue;
        if (chosen == N_ ||
            std::abs(costs_.compute_ms(i, j) - target) < std::abs(costs_.compute_ms(i, chosen) - target))
          chosen = j;
      }
      if (chosen == N_) return {};
      b[s + 1] = chosen;
    }
    return b;
  }

private:
  double in(std::size_t s, std::size_t i) const { return s == 0 ? 0.0 : send_(s, i); }
  double out(std::size_t s, std::size_t j) const { return s + 1 == S_ ? 0.0 : send_(s + 1, j); }
  double prefix(std::size_t i) const { return costs_.compute_ms(0, i); }

  /// A split whose every stage's cost is within `bound` (empty: none): one StageSweep,
  /// each stage paying w · its sends besides its compute.
  std::vector<std::size_t> within(double bound, double w) {
    return sweep_.run(
        bound, bound, slowness_, fits_, [&](std::size_t s, std::size_t i, double) { return w * in(s, i); },
        [&](std::size_t s, std::size_t j) { return w * out(s, j); });
  }

  const partitioning::UnitCosts& costs_;
  std::size_t S_, N_;
  Slowness slowness_;
  Fits fits_;
  Send send_;
  StageSweep sweep_;
};

} // namespace actorpipe::autopipe
