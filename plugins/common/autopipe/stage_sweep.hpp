#pragma once

/// The forward sweep both split searches run under a bound T on every stage's compute
/// (LatencySplit for the least latency, SendAwareSplit for whether T can be met): stage
/// by stage, each end j of stage s takes the best of the starts i that stage s − 1
/// reached, among those whose units [i, j) stay within T and fit in memory. That window
/// only moves right as j grows, so a monotone queue (StartQueue) answers each end in
/// amortised O(1): O(S · N) a sweep, and near the least bound about O(N), since no stage
/// ends where the stages after it cannot finish (stage_ends.hpp) or past the last end
/// a start can still reach. `fits` must keep fitting as a range shrinks (the window's
/// start only moves right on that): a stage whose widest range fits asks nothing else.
///
/// An end's value is the least, over the starts in the window, of what reaching the
/// start cost and the stage's compute, plus what ending there costs:
///   value(j) = C(j) / speed_s + extra(s, j) + min over i of (cost(s, i, reached_i) − C(i) / speed_s),
/// C being the prefix sums of compute. The searches differ only in those two, handed in:
///   cost(s, i, reached)  what stage s pays to start at i, which stage s − 1 reached at
///                        value `reached` (+∞: it may not start there)
///   extra(s, j)          what stage s pays to end at j, never less than 0
/// and in the most an end's value may be (`ceiling`; +∞: no limit).

#include "common/autopipe/stage_ends.hpp"
#include "common/autopipe/start_queue.hpp"
#include "common/partitioning/unit_costs.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace actorpipe::autopipe {

class StageSweep {
public:
  StageSweep(const partitioning::UnitCosts& costs, std::size_t stages)
      : costs_(costs), S_(stages), N_(costs.size()), parent_(S_ * (N_ + 1), none), prefix_(N_ + 1) {
    for (std::size_t i = 0; i <= N_; ++i)
      prefix_[i] = costs.compute_ms(0, i);
  }

  /// The boundaries (0 = b_0 < … < b_S = N) of the split through the best start of
  /// every end, back from the model's end; empty where the last stage cannot reach it.
  template <class Slowness, class Fits, class Cost, class Extra>
  std::vector<std::size_t> run(double bound, double ceiling, const Slowness& slowness, const Fits& fits,
                               const Cost& cost, const Extra& extra) {
    // Locals, not members: nothing else can write them, so their state stays in
    // registers through the loop.
    std::vector<double> reached(N_ + 1), next(N_ + 1); // per end, the value stage s − 1 / s reached it at
    StartQueue queue(N_ + 1);
    Ends starts;
    starts.add(0);
    const std::vector<std::size_t> least = least_ends(costs_, S_, bound, slowness);
    // An end's value is at least its stage's compute: a ceiling within the bound keeps
    // the compute within it too, and the window need not ask.
    const bool window_by_compute = ceiling > bound;
    for (std::size_t s = 0; s < S_; ++s) {
      queue.clear();
      Ends ends;
      const double slow = slowness(s);
      const std::size_t last = s + 1 == S_ ? N_ : N_ - (S_ - s - 1);
      std::size_t low = starts.first; // the least start within the bound and memory for the current end
      // Where the widest range fits, every window does.
      const bool roomy = fits(s, starts.first, last);
      for (std::size_t j = std::max(s, starts.first) + 1; j <= last; ++j) {
        const std::size_t i = j - 1;
        next[j] = unreachable; // until reached: the next stage reads its starts' values alone
        if (i <= starts.final && reached[i] < unreachable)
          if (const double c = cost(s, i, reached[i]); c < unreachable) queue.push(i, c - prefix(i) * slow);
        if (j < least[s]) continue; // the stages after cannot hold the rest
        while (low < j &&
               ((window_by_compute && costs_.compute_ms(low, j) * slow > bound) || (!roomy && !fits(s, low, j))))
          ++low;
        queue.drop_below(low);
        if (queue.empty()) {
          if (i >= starts.final) break; // no start left, and none to come
          continue;
        }
        if (s + 1 == S_ && j != N_) continue;
        const double value = prefix(j) * slow + extra(s, j) + queue.best_key();
        if (value > ceiling) {
          // With no start to come, starting and computing alone pass the ceiling from here on.
          if (i >= starts.final && prefix(j) * slow + queue.best_key() > ceiling) break;
          continue;
        }
        next[j] = value;
        parent_[s * (N_ + 1) + j] = static_cast<std::uint32_t>(queue.best());
        ends.add(j);
      }
      if (ends.none) return {};
      starts = ends;
      std::swap(reached, next);
    }
    std::vector<std::size_t> b(S_ + 1, N_);
    for (std::size_t s = S_; s-- > 0;)
      b[s] = parent_[s * (N_ + 1) + b[s + 1]];
    return b;
  }

private:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  static constexpr double unreachable = std::numeric_limits<double>::infinity();

  /// The ends a stage reached, [first, final] (they arrive in order): the next stage's
  /// starts. Near the least bound a narrow window, outside which the next stage has
  /// nothing to do.
  struct Ends {
    std::size_t first = 0, final = 0;
    bool none = true;

    void add(std::size_t j) {
      if (none) first = j;
      final = j, none = false;
    }
  };

  double prefix(std::size_t i) const { return prefix_[i]; }

  const partitioning::UnitCosts& costs_;
  std::size_t S_, N_;
  std::vector<std::uint32_t> parent_; ///< [s · (N + 1) + j]: where stage s starts when it ends at j
  std::vector<double> prefix_;        ///< compute_ms(0, i), read at every step
};

} // namespace actorpipe::autopipe
