#pragma once

/// The dynamic programmes over contiguous splits that the exact partitioners share:
/// where each cut may fall (CutCandidates), the best split among those (best_split,
/// and min_max_split on it), coarse to fine for chains too long to weigh every pair of
/// boundaries (coarse_to_fine), and the bisection for stage costs that only grow with
/// a stage (min_max_split_monotone).

#include "common/partitioning/unit_costs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

namespace actorpipe::partitioning {

/// Where each cut of a split of N units into S stages may fall.
struct CutCandidates {
  /// at[s]: the unit boundaries cut s may take, ascending; at[0] = {0}, at[S] = {N}.
  std::vector<std::vector<std::size_t>> at;

  /// Every boundary that leaves each stage a unit: cut s anywhere in [s, N − (S − s)].
  static CutCandidates every(std::size_t S, std::size_t N);
  /// The (i, j) pairs a programme over these candidates weighs, i < j: its work.
  double pairs() const;
};

/// Calls `report` with the fraction of a programme's work done, about a hundred times,
/// so that a long one shows progress at no real cost.
class WorkProgress {
public:
  WorkProgress(std::function<void(double)> report, double work) : report_(std::move(report)), work_(work) {}
  void add(double done) {
    done_ += done;
    if (!report_ || done_ < next_) return;
    report_(std::min(1.0, done_ / work_));
    next_ = done_ + work_ / 100;
  }

private:
  std::function<void(double)> report_;
  double work_, done_ = 0, next_ = 0;
};

/// The boundaries of a programme's best split, from where each best prefix's last
/// stage starts: from[s][k], an index into at[s − 1], for the prefix ending at at[s][k].
inline std::vector<std::size_t> trace_back(const CutCandidates& candidates,
                                           const std::vector<std::vector<std::uint32_t>>& from) {
  const std::size_t S = candidates.at.size() - 1;
  std::vector<std::size_t> boundaries(S + 1);
  std::size_t k = candidates.at[S].size() - 1;
  for (std::size_t s = S; s > 0; --s) {
    boundaries[s] = candidates.at[s][k];
    k = from[s][k];
  }
  boundaries[0] = candidates.at[0][k];
  return boundaries;
}

/// The split over `candidates` whose state is best: from `start` before any unit, a
/// stage s (from 0) of units [i, j) makes `extend(before, s, i, j)` of the state
/// before it (nullopt where the stage is ruled out), and `better(a, b)` says which of
/// two states of one prefix to keep. Returns the unit boundaries b_0 = 0 < … < b_S = N,
/// or nothing where no split is allowed. Ties keep the earliest last cut.
template <class State, class Extend, class Better>
std::vector<std::size_t> best_split(const CutCandidates& candidates, const State& start, const Extend& extend,
                                    const Better& better, const std::function<void(double)>& progress = {}) {
  const std::size_t S = candidates.at.size() - 1;
  WorkProgress done(progress, candidates.pairs());
  // best[s][k]: the best state of a split of [0, at[s][k]) into s stages; from[s][k]:
  // the index in at[s − 1] where its last stage starts.
  std::vector<std::vector<std::optional<State>>> best(S + 1);
  std::vector<std::vector<std::uint32_t>> from(S + 1);
  best[0].assign(1, start);
  for (std::size_t s = 1; s <= S; ++s) {
    const std::vector<std::size_t>& before = candidates.at[s - 1];
    const std::vector<std::size_t>& here = candidates.at[s];
    best[s].assign(here.size(), std::nullopt);
    from[s].assign(here.size(), 0);
    const std::vector<std::optional<State>>& prefixes = best[s - 1];
    for (std::size_t k = 0; k < here.size(); ++k) {
      const std::size_t j = here[k];
      // The best so far in locals: the innermost loop writes nothing to memory.
      std::optional<State> kept;
      std::uint32_t kept_from = 0;
      std::size_t b = 0;
      for (; b < before.size() && before[b] < j; ++b) {
        if (!prefixes[b]) continue;
        std::optional<State> next = extend(*prefixes[b], s - 1, before[b], j);
        if (next && (!kept || better(*next, *kept))) {
          kept = std::move(next);
          kept_from = static_cast<std::uint32_t>(b);
        }
      }
      best[s][k] = std::move(kept);
      from[s][k] = kept_from;
      done.add(static_cast<double>(b));
    }
  }
  if (best[S].empty() || !best[S].back()) return {};
  return trace_back(candidates, from);
}

/// What min_max_split may assume of cost(s, i, j) for a stage's end j: nothing, or that
/// it never rises as the stage starts later (sums of unit figures, nonincreasing in i),
/// infinite costs (ruled out) aside.
enum class StartCost { any, falls_as_start_rises };

/// The split over `candidates` that minimises the largest cost(s, i, j) of stage s
/// holding units [i, j); infinite costs rule a stage out. Empty when no split has a
/// finite cost. best_split() with a double for state, in plain arrays: the exact
/// partitioners and AutoPipe-H's search run it in their innermost loops. Where the
/// cost falls as a stage starts later, each end weighs its starts from the latest back
/// and stops at the first whose finite cost alone passes the best found, which no
/// earlier start can beat: the same split (of equal largest costs, the earliest last
/// start), weighing about a stage's width of starts for each end rather than all.
template <class Cost>
std::vector<std::size_t> min_max_split(const CutCandidates& candidates, const Cost& cost,
                                       const std::function<void(double)>& progress = {},
                                       StartCost shape = StartCost::any) {
  constexpr double none = std::numeric_limits<double>::infinity();
  const std::size_t S = candidates.at.size() - 1;
  WorkProgress done(progress, candidates.pairs());
  // best[s][k]: the least largest cost of a split of [0, at[s][k]) into s stages;
  // from[s][k]: the index in at[s − 1] where its last stage starts.
  std::vector<std::vector<double>> best(S + 1);
  std::vector<std::vector<std::uint32_t>> from(S + 1);
  best[0].assign(1, 0.0);
  for (std::size_t s = 1; s <= S; ++s) {
    const std::vector<std::size_t>& before = candidates.at[s - 1];
    const std::vector<std::size_t>& here = candidates.at[s];
    const std::vector<double>& prefixes = best[s - 1];
    best[s].assign(here.size(), none);
    from[s].assign(here.size(), 0);
    for (std::size_t k = 0; k < here.size(); ++k) {
      const std::size_t j = here[k];
      double kept = none;
      std::uint32_t kept_from = 0;
      const std::size_t starts =
          static_cast<std::size_t>(std::lower_bound(before.begin(), before.end(), j) - before.begin());
      if (shape == StartCost::any) {
        for (std::size_t b = 0; b < starts; ++b) {
          if (prefixes[b] == none) continue;
          const double value = std::max(prefixes[b], cost(s - 1, before[b], j));
          if (value < kept) kept = value, kept_from = static_cast<std::uint32_t>(b);
        }
      } else {
        for (std::size_t b = starts; b-- > 0;) {
          if (prefixes[b] == none) continue;
          const double c = cost(s - 1, before[b], j);
          if (c > kept && c < none) break;
          const double value = std::max(prefixes[b], c);
          if (value < kept || (value == kept && value < none)) kept = value, kept_from = static_cast<std::uint32_t>(b);
        }
      }
      best[s][k] = kept;
      from[s][k] = kept_from;
      done.add(static_cast<double>(starts));
    }
  }
  if (best[S].empty() || best[S].back() == none) return {};
  return trace_back(candidates, from);
}

/// min_max_split over every boundary, exactly, in O(S · N²) (StartCost::any).
template <class Cost>
std::vector<std::size_t> min_max_split(std::size_t S, std::size_t N, const Cost& cost,
                                       const std::function<void(double)>& progress = {},
                                       StartCost shape = StartCost::any) {
  if (S == 0 || S > N) return {};
  return min_max_split(CutCandidates::every(S, N), cost, progress, shape);
}

/// The pairs of boundaries a programme weighs, at a few nanoseconds each, above which
/// coarse_to_fine() coarsens: about a second.
inline constexpr double exhaustive_pairs = 4e8;

/// Where weighing every pair of boundaries would cost more than `budget` pairs, the
/// boundaries between groups of consecutive units: as many groups as the budget allows,
/// half of the boundaries at equal shares of the compute, half at equal unit counts (so
/// that no group is longer than 2N/groups units). Empty where every boundary fits.
std::vector<std::size_t> coarse_groups(const UnitCosts& costs, std::size_t S, double budget);

/// Every boundary within the groups either side of each cut of `coarse`, a split over
/// the groups' boundaries `groups`: where the fine search lets each cut move.
CutCandidates around(const std::vector<std::size_t>& coarse, const std::vector<std::size_t>& groups);

/// Runs `search(candidates, progress)` over every boundary where that weighs at most
/// `budget` pairs. Beyond that, as DAPPLE's and Piper's programmes allow (both weigh
/// layers, and layers may be grouped), it runs it first over coarse_groups()' boundaries,
/// then over every boundary around() the cuts that found; the fine pass keeps the
/// coarse split among its candidates, so it is never worse. Returns the last search's
/// boundaries.
template <class Search>
std::vector<std::size_t> coarse_to_fine(const UnitCosts& costs, std::size_t S, const Search& search,
                                        const std::function<void(double)>& progress = {},
                                        double budget = exhaustive_pairs) {
  const std::vector<std::size_t> groups = coarse_groups(costs, S, budget);
  if (groups.empty()) return search(CutCandidates::every(S, costs.size()), progress);
  CutCandidates coarse{std::vector<std::vector<std::size_t>>(S + 1)};
  coarse.at[0] = {0};
  coarse.at[S] = {costs.size()};
  for (std::size_t s = 1; s < S; ++s)
    coarse.at[s].assign(groups.begin() + static_cast<std::ptrdiff_t>(s),
                        groups.end() - static_cast<std::ptrdiff_t>(S - s));
  // The coarse pass is nearly all the work: it reports up to 95%.
  const auto share = [&progress](double from, double to) -> std::function<void(double)> {
    if (!progress) return {};
    return [&progress, from, to](double f) { progress(from + (to - from) * f); };
  };
  const std::vector<std::size_t> found = search(coarse, share(0.0, 0.95));
  if (found.empty()) return found;
  return search(around(found, groups), share(0.95, 1.0));
}

/// The same least largest cost as min_max_split with cost max(cut(i) for i > 0,
/// stage(i, j)), for a `stage` cost that a longer stage never lowers (sums of unit
/// figures: nonincreasing in i, nondecreasing in j) and any `cut` cost. Instead of the
/// O(S · N²) programme it bisects on the answer, over the bit patterns of non-negative
/// doubles (at most 64 rounds, each an O(S · N) reachability pass), so that it finds
/// exactly the programme's value: a 100,000-unit chain takes a fraction of a second.
template <class Stage, class Cut>
std::vector<std::size_t> min_max_split_monotone(std::size_t S, std::size_t N, const Stage& stage, const Cut& cut,
                                                const std::function<void(double)>& progress = {}) {
  if (S == 0 || S > N) return {};
  // parent[s][j]: where the last stage of a split of [0, j) into s stages starts, all
  // costs at most `limit`; N + 1 where there is none.
  std::vector<std::vector<std::size_t>> parent(S + 1, std::vector<std::size_t>(N + 1, N + 1));
  auto feasible = [&](double limit) {
    parent[0].assign(N + 1, N + 1);
    parent[0][0] = 0;
    for (std::size_t s = 1; s <= S; ++s) {
      std::vector<std::size_t>& here = parent[s];
      here.assign(N + 1, N + 1);
      std::size_t lo = 0, last = N + 1; // the latest valid start before j
      for (std::size_t j = 1; j <= N; ++j) {
        const std::size_t i = j - 1; // a new candidate start
        if (parent[s - 1][i] <= N && (i == 0 || cut(i) <= limit)) last = i;
        while (lo < j && stage(lo, j) > limit)
          ++lo;
        if (last <= N && last >= lo) here[j] = last;
      }
    }
    return parent[S][N] <= N;
  };
  double highest = stage(0, N);
  for (std::size_t i = 1; i < N; ++i)
    highest = std::max(highest, cut(i));
  if (!std::isfinite(highest)) return {};
  // Non-negative doubles order as their bit patterns do.
  auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  auto value = [](std::uint64_t b) { return std::bit_cast<double>(b); };
  std::uint64_t lo = 0, hi = bits(std::max(highest, 0.0)); // feasible(value(hi))
  for (int round = 0; lo < hi; ++round) {
    if (progress) progress(std::min(1.0, round / 64.0));
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (feasible(value(mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  if (!feasible(value(hi))) return {};
  std::vector<std::size_t> boundaries(S + 1, N);
  for (std::size_t s = S; s > 0; --s)
    boundaries[s - 1] = parent[s][boundaries[s]];
  return boundaries;
}

} // namespace actorpipe::partitioning
