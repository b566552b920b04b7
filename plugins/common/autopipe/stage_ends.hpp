#pragma once

/// The split sweeps' bounds on where a stage may end. Under a bound T on every stage's
/// compute on its device (and on more than its compute, where sends count too), the
/// stages after s hold at most T · their speeds of compute, so an end that leaves them
/// more reaches no split (least_ends); and the stages up to s hold at most T · theirs,
/// so no split ends stage s past what they hold (furthest_ends). Near the least bound
/// that leaves about one stage's width of ends for each stage, which the sweeps would
/// otherwise try across the whole model: the same splits, in a fraction of the steps.

#include "common/partitioning/unit_costs.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

namespace actorpipe::autopipe {

/// A billionth of slack keeps rounding in the prefix sums from ruling out a split that
/// reaches.
inline constexpr double end_slack = 1e-9;

/// For each stage s, the least unit boundary at which it may end under `bound`;
/// slowness(s) is 1 / stage s's speed. No bound (infinity): 0 for all.
template <class Slowness>
std::vector<std::size_t> least_ends(const partitioning::UnitCosts& costs, std::size_t stages, double bound,
                                    const Slowness& slowness) {
  std::vector<std::size_t> least(stages, 0);
  if (!std::isfinite(bound)) return least;
  const std::size_t N = costs.size();
  double capacity = 0; // of the stages after s
  std::size_t j = N;
  for (std::size_t s = stages; s-- > 0;) {
    while (j > 0 && costs.compute_ms(j - 1, N) <= capacity * (1 + end_slack))
      --j;
    least[s] = j;
    capacity += bound / slowness(s);
  }
  return least;
}

/// For each stage s, the furthest unit boundary at which it may end under `bound`. No
/// bound (infinity): the model's end for all.
template <class Slowness>
std::vector<std::size_t> furthest_ends(const partitioning::UnitCosts& costs, std::size_t stages, double bound,
                                       const Slowness& slowness) {
  const std::size_t N = costs.size();
  std::vector<std::size_t> furthest(stages, N);
  if (!std::isfinite(bound)) return furthest;
  double capacity = 0; // of the stages up to s
  std::size_t j = 0;
  for (std::size_t s = 0; s < stages; ++s) {
    capacity += bound / slowness(s);
    while (j < N && costs.compute_ms(0, j + 1) <= capacity * (1 + end_slack))
      ++j;
    furthest[s] = j;
  }
  return furthest;
}

} // namespace actorpipe::autopipe
