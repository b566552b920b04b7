#pragma once

/// The split sweeps' bound from the far end: a stage may end only where the stages
/// after it can still hold the rest of the model. Under a bound T on every stage's
/// compute on its device (and on more than its compute, where sends count too), the
/// stages after s hold at most T · their speeds of compute, so an end that leaves them
/// more reaches no split. Near the least bound that rules out all but about one stage's
/// width of ends for each stage, which the sweeps would otherwise try from the model's
/// start: the same splits, in a fraction of the steps.

#include "common/partitioning/unit_costs.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

namespace actorpipe::autopipe {

/// For each stage s, the least unit boundary at which it may end under `bound`;
/// slowness(s) is 1 / stage s's speed. A billionth of slack keeps rounding in the
/// prefix sums from ruling out a split that reaches. No bound (infinity): 0 for all.
template <class Slowness>
std::vector<std::size_t> least_ends(const partitioning::UnitCosts& costs, std::size_t stages, double bound,
                                    const Slowness& slowness) {
  std::vector<std::size_t> least(stages, 0);
  if (!std::isfinite(bound)) return least;
  const std::size_t N = costs.size();
  double capacity = 0; // of the stages after s
  std::size_t j = N;
  for (std::size_t s = stages; s-- > 0;) {
    while (j > 0 && costs.compute_ms(j - 1, N) <= capacity * (1 + 1e-9))
      --j;
    least[s] = j;
    capacity += bound / slowness(s);
  }
  return least;
}

} // namespace actorpipe::autopipe
