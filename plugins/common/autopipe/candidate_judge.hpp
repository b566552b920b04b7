#pragma once

/// Step 4 of AutoPipe-H's search (cut_search.hpp): where the estimate that ranked the
/// candidates ran representatives rather than every pipeline, or priced micro-batches
/// at the steady state's period, the best few are judged by a better estimate
/// (judge_of), the winner settles on it where that was a pod or it overturned the
/// estimate's ranking (settle), and where representatives or a pod judged and every
/// pipeline is affordable, the few best are simulated in full (judged_fastest).
/// Mapper `hetero` judges the cuts it prices its layouts with by judge_of and settle
/// too.

#include "common/partitioning/unit_costs.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/plugin.hpp>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace actorpipe::autopipe {

/// The most actions (every pipeline's) of a simulation that judges the last
/// candidates, and how many it judges: a few milliseconds each on 10,000 devices.
constexpr std::size_t max_judged_actions = std::size_t{1} << 18;
constexpr std::size_t judged_candidates = 6;
/// Where representatives or a pod judged, the most actions of simulating every pipeline
/// for the settled winner and the `checked_candidates` best by the estimate and by the
/// judge (about 100 ms each on 10,000 devices at 32 micro-batches).
constexpr std::size_t max_checked_actions = std::size_t{1} << 20;
constexpr std::size_t checked_candidates = 2;

/// Orders pairs of a time and a split by the time.
struct ByTime {
  template <class Pair> bool operator()(const Pair& a, const Pair& b) const { return a.first < b.first; }
};

/// What judges a search's last few candidates where `model` is not exact: every
/// pipeline and micro-batch (IterationModel::in_full) where that costs at most
/// `max_judged_actions`; else, where pipelines share the lanes of the slowest of
/// `model`'s representatives, which one representative in lockstep with the rest
/// misjudges, that pod as itself (IterationModel::in_pod), where an estimate of every
/// micro-batch costs as much at most; else none (`model` itself, with every micro-batch
/// where the lanes bind).
std::optional<IterationModel> judge_of(const IterationModel& model);

/// Cut-by-cut descent from `b` (estimated at `t`) on `judge`, within `evaluations`
/// estimates and the search's budget of simulated actions: where a search ranked by an
/// estimate that misjudged its candidates, the better estimate's own optimum can lie a
/// few units from every one of them (DAPPLE's cuts on a stage-major layout of 625
/// pipelines, 3% faster than any candidate).
void settle(const PlanContext& context, const partitioning::UnitCosts& costs, IterationModel& judge,
            const partitioning::MemoryFit& fits, std::vector<std::size_t>& b, double& t, std::size_t evaluations);

/// The fastest of `ranked` (splits and their estimates on `model`, sorted by the
/// estimate; not empty): the first where `model` is exact; else the fastest of the
/// best `judged_candidates` on judge_of(), or on `model` with every micro-batch where
/// there is none, settled on the judge where that is a pod or it overturned the
/// estimate's ranking; and where representatives or a pod judged and every pipeline
/// costs at most `max_checked_actions`, the fastest in full of that winner and the
/// `checked_candidates` best by the estimate and by the judge.
/// Splits in `also` are judged besides those (where `model` is exact, estimated),
/// whatever their estimate: ranked among them, one the estimate misjudges could push a
/// better one out of the few judged.
std::vector<std::size_t> judged_fastest(const PlanContext& context, const partitioning::UnitCosts& costs,
                                        IterationModel& model, const partitioning::MemoryFit& fits,
                                        const std::vector<std::pair<double, std::vector<std::size_t>>>& ranked,
                                        const std::vector<std::vector<std::size_t>>& also = {});

} // namespace actorpipe::autopipe
