#pragma once

/// Splits that trade balance against the bytes sent, for one pipeline's latency:
///   L = (m − 1) · max_s max(w_s, send_s) + Σ_s (w_s + 2 · send_s) + sync_0,
/// w_s being stage s's compute on its device and send_s one micro-batch's activations
/// across the cut before it: the steady state pays the slowest stage or link once per
/// micro-batch; filling and draining the pipeline pays every stage and every send, both
/// ways, once; and the first stage, which finishes last, pays its all-reduce and
/// optimizer step after that (DAPPLE's latency, with each stage's own speed, memory and
/// links).
///
/// For a bound T on every w_s (and, in a second family, on every send_s), the split of
/// least Σ_s (w_s + 2 · send_s) + sync_0 is a shortest path: with prefix sums C, stage s
/// ending at j costs
///   C(j) / speed_s + min over starts i of (best[s − 1][i] + 2 · send_s(i) − C(i) / speed_s),
/// the starts i being those (whose send stays within T, in the second family, and) whose
/// stage stays within T and fits in memory: one StageSweep, O(S · N), and near T0 about
/// O(N). Bounds are taken from T0 (the compute-only optimum) upwards (at one micro-batch
/// from no bound downwards), and the splits of least L kept; between_bounds() then looks
/// between the bounds beside the best for a lesser L.

#include "common/autopipe/stage_sweep.hpp"
#include "common/partitioning/unit_costs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace actorpipe::autopipe {

/// Bounds on the slowest stage to try, as T0 · (1 + δ): a wide range, and a few near
/// T0 where each try must be cheap (a long pipeline's latency is ruled by its slowest
/// stage anyway).
inline constexpr double wide_bounds[] = {0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0};
inline constexpr double near_bounds[] = {0.0, 0.1};

/// The least Σ send(s, b_s) over s ≥ 1 of any split of `units` into `stages` stages, its
/// cuts wherever the compute falls: stage s's send at cut i plus the least for the
/// stages before with their last cut short of i, stage by stage, O(S · N).
template <class Send> double least_sends(std::size_t stages, std::size_t units, const Send& send) {
  const double none = std::numeric_limits<double>::infinity();
  std::vector<double> least(units, none), next(units); // per cut, the least up to stage s
  for (std::size_t s = 1; s < stages; ++s) {
    double before = s == 1 ? 0.0 : none; // the least over the cuts short of i
    for (std::size_t i = 0; i < units; ++i) {
      next[i] = i > 0 && before < none ? send(s, i) + before : none;
      if (s > 1) before = std::min(before, least[i]);
    }
    std::swap(least, next);
  }
  const double found = stages < 2 ? 0.0 : *std::min_element(least.begin(), least.end());
  return found < none ? found : 0.0;
}

/// slowness(s), fits(s, i, j) and send(s, i) as in SendAwareSplit; sync(j): the first
/// stage's all-reduce and step when it holds units [0, j).
template <class Slowness, class Fits, class Send, class Sync> class LatencySplit {
public:
  LatencySplit(const partitioning::UnitCosts& costs, std::size_t stages, std::size_t micro_batches, Slowness slowness,
               Fits fits, Send send, Sync sync)
      : costs_(costs), S_(stages), N_(costs.size()), m_(micro_batches), slowness_(slowness), fits_(fits), send_(send),
        sync_(sync), sweep_(costs, stages) {}

  /// L of a split, as above.
  double latency(const std::vector<std::size_t>& b) const {
    double slowest = 0, sum = 0;
    for (std::size_t s = 0; s < S_; ++s) {
      const double w = costs_.compute_ms(b[s], b[s + 1]) * slowness_(s);
      const double send = s > 0 ? send_(s, b[s]) : 0.0;
      slowest = std::max({slowest, w, send});
      sum += w + 2 * send;
    }
    return static_cast<double>(m_ > 0 ? m_ - 1 : 0) * slowest + sum + sync_(b[1]);
  }

  /// The splits for bounds T0 · (1 + δ), δ from `deltas`, and, `beyond` them, on
  /// from the last by half again each time up to no bound at all; the `keep` of least
  /// L first (distinct ones only). Few micro-batches pay the slowest stage seldom, and
  /// their least L may leave one stage far above T0: at one micro-batch, the fewest
  /// bytes cut wherever the compute falls. Where memory bounds no stage (nothing fits
  /// and the plan will say so), not beyond: a stage that holds most of the model
  /// would only overflow the more.
  std::vector<std::vector<std::size_t>> candidates(double t0, std::size_t keep, std::span<const double> deltas,
                                                   bool beyond = true) {
    last_ = {};
    std::vector<double> bounds;
    for (double delta : deltas)
      bounds.push_back(t0 * (1 + delta));
    double slowest = 0, fastest = std::numeric_limits<double>::infinity();
    for (std::size_t s = 0; s < S_; ++s)
      slowest = std::max(slowest, slowness_(s)), fastest = std::min(fastest, slowness_(s));
    const double whole = prefix(N_) * slowest;     // no stage can exceed it
    const double least_sum = prefix(N_) * fastest; // no split computes less in all
    if (beyond && !bounds.empty() && bounds.back() > 0) {
      for (double b = bounds.back() * 1.5; b < whole; b *= 1.5)
        bounds.push_back(b);
      bounds.push_back(std::numeric_limits<double>::infinity());
    }
    // Bounding the sends changes nothing where no send passes the bound.
    double most_send = 0;
    for (std::size_t s = 1; s < S_; ++s)
      for (std::size_t i = 1; i < N_; ++i)
        most_send = std::max(most_send, send_(s, i));
    // The split under no bound, solved once the bounds go beyond the given ones: a bound
    // at or above its slowest stage (and send, where sends are bounded) admits it, and
    // it is the least of all, so that is the split under that bound too.
    std::optional<std::vector<std::size_t>> unbounded;
    double unbounded_stage = 0, unbounded_send = 0;
    auto admits_unbounded = [&](double bound, bool sends_bounded) {
      if (!unbounded) {
        unbounded = solve(std::numeric_limits<double>::infinity(), false);
        for (std::size_t s = 0; !unbounded->empty() && s < S_; ++s) {
          const std::vector<std::size_t>& b = *unbounded;
          unbounded_stage = std::max(unbounded_stage, costs_.compute_ms(b[s], b[s + 1]) * slowness_(s));
        }
        if (!unbounded->empty()) unbounded_send = largest_send(*unbounded);
      }
      return !unbounded->empty() && bound >= unbounded_stage && (!sends_bounded || bound >= unbounded_send);
    };
    std::vector<std::pair<double, std::vector<std::size_t>>> found;
    double least = std::numeric_limits<double>::infinity();
    // Under each bound, whether the split with its sends unbounded already keeps them
    // within it (or no split keeps the compute within it): the split with sends bounded
    // too is then the same one, found already.
    std::vector<char> sends_within(bounds.size(), 0);
    auto split_at = [&](std::size_t k, bool sends_bounded) {
      std::vector<std::size_t> b = k >= deltas.size() && admits_unbounded(bounds[k], sends_bounded)
                                       ? *unbounded
                                       : solve(bounds[k], sends_bounded);
      if (!sends_bounded) sends_within[k] = b.empty() || largest_send(b) <= bounds[k];
      return b;
    };
    auto skipped = [&](std::size_t k) { return most_send <= bounds[k] || sends_within[k]; };
    // Keeps a split (once); its L, infinite where there is none.
    auto add = [&](std::vector<std::size_t> b) {
      if (b.empty()) return std::numeric_limits<double>::infinity();
      const double l = latency(b);
      least = std::min(least, l);
      if (std::none_of(found.begin(), found.end(), [&](const auto& f) { return f.second == b; }))
        found.emplace_back(l, std::move(b));
      return l;
    };
    if (m_ <= 1) {
      // At one micro-batch L is the least Σ (w + 2 · send) + sync_0 that a bound admits,
      // which only falls as the bound loosens, and bounding the sends too only adds to
      // it: from the loosest bound down, once `keep` splits found have L at most that of
      // the last bound's split, no tighter bound finds a lesser one.
      for (std::size_t k = bounds.size(); k-- > 0;) {
        const double l = add(split_at(k, false));
        if (!skipped(k)) add(split_at(k, true));
        if (static_cast<std::size_t>(
                std::count_if(found.begin(), found.end(), [&](const auto& f) { return f.first <= l; })) >= keep)
          break;
      }
    } else {
      last_.fill = least_sum + 2 * least_sends(S_, N_, send_);
      last_.whole = whole;
      for (bool sends_bounded : {false, true})
        for (std::size_t k = 0; k < bounds.size(); ++k) {
          if (k > 0 && gains_nothing(bounds[k - 1], least)) break;
          if (sends_bounded && skipped(k)) continue;
          if (const double l = add(split_at(k, sends_bounded)); l < last_.least)
            last_.least = l, last_.low = bounds[k > 0 ? k - 1 : 0], last_.high = bounds[k],
            last_.higher = k + 1 < bounds.size() ? bounds[k + 1] : bounds[k], last_.sends_bounded = sends_bounded;
        }
    }
    std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t k = 0; k < found.size() && k < keep; ++k)
      out.push_back(std::move(found[k].second));
    return out;
  }

  /// After candidates() at several micro-batches, the split of least L under
  /// 2 · `between` − 1 bounds evenly spaced from the bound before the one whose split
  /// had the least L to the bound after it (in that split's family), where its L is
  /// less still; empty otherwise. The bounds are a coarse grid, and the least L can lie
  /// between two of them: the looser bound's split pays the steady state for a slower
  /// stage than it needs, and the tighter one rules out the cuts that send little.
  std::vector<std::size_t> between_bounds(std::size_t between) {
    std::vector<std::size_t> best;
    if (std::isinf(last_.least)) return best;
    const double low = last_.low, high = std::isinf(last_.higher) ? last_.whole : last_.higher;
    double least = last_.least, bound_before = low;
    for (std::size_t q = 1; q < 2 * between && !gains_nothing(bound_before, least); ++q) {
      const double bound = low + (high - low) * static_cast<double>(q) / static_cast<double>(2 * between);
      if (bound == last_.high) continue; // its split is the least already
      if (std::vector<std::size_t> b = solve(bound, last_.sends_bounded); !b.empty())
        if (const double l = latency(b); l < least) least = l, best = std::move(b);
      bound_before = bound;
    }
    return best;
  }

  /// The split of least Σ (w + 2 · send) + sync_0 with every w_s ≤ bound, and every
  /// send_s too when `sends_bounded`; empty when none.
  std::vector<std::size_t> solve(double bound, bool sends_bounded) {
    return sweep_.run(
        bound, std::numeric_limits<double>::infinity(), slowness_, fits_,
        [&](std::size_t s, std::size_t i, double reached) {
          const double send = s > 0 ? send_(s, i) : 0.0;
          return sends_bounded && send > bound ? std::numeric_limits<double>::infinity() : reached + 2 * send;
        },
        [&](std::size_t s, std::size_t j) { return s == 0 ? sync_(j) : 0.0; });
  }

private:
  /// At several micro-batches, what a bound adds has its slowest stage (or send) above
  /// the bound before, which the steady state pays m − 1 times, besides filling and
  /// draining with all the compute and the least sends (`last_.fill`): where that
  /// passes the least L found, nothing gains.
  bool gains_nothing(double bound_before, double least) const {
    return static_cast<double>(m_ - 1) * bound_before + last_.fill >= least;
  }
  double largest_send(const std::vector<std::size_t>& b) const {
    double most = 0;
    for (std::size_t s = 1; s < S_; ++s)
      most = std::max(most, send_(s, b[s]));
    return most;
  }
  double prefix(std::size_t i) const { return costs_.compute_ms(0, i); }

  const partitioning::UnitCosts& costs_;
  std::size_t S_, N_, m_;
  Slowness slowness_;
  Fits fits_;
  Send send_;
  Sync sync_;
  StageSweep sweep_;
  /// What the last candidates() at several micro-batches found, for between_bounds().
  struct Last {
    double least = std::numeric_limits<double>::infinity(); ///< the least L of a bound's split
    double low = 0, high = 0, higher = 0;                   ///< the bounds before, of and after that split's
    bool sends_bounded = false;                             ///< that split's family
    double fill = 0;                                        ///< the least compute and sends of any split, both ways
    double whole = 0;                                       ///< the most any stage can compute
  } last_;
};

} // namespace actorpipe::autopipe
