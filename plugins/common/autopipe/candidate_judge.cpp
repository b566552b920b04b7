/// Step 4 of AutoPipe-H's search (candidate_judge.hpp says what), compiled once into
/// the plugins' common library.

#include "common/autopipe/candidate_judge.hpp"

#include "common/autopipe/iteration_search.hpp"

#include <algorithm>
#include <limits>

namespace actorpipe::autopipe {

std::optional<IterationModel> judge_of(const IterationModel& model) {
  if (model.exact()) return std::nullopt;
  if (model.all_actions() <= max_judged_actions) return model.in_full();
  IterationModel pod = model.in_pod();
  if (pod.simulated_pipelines() <= model.simulated_pipelines() || pod.most_simulated_actions() > max_judged_actions)
    return std::nullopt;
  return pod;
}

void settle(const PlanContext& context, const partitioning::UnitCosts& costs, IterationModel& judge,
            const partitioning::MemoryFit& fits, std::vector<std::size_t>& b, double& t, std::size_t evaluations) {
  IterationSearch descent(context, costs, judge, fits, evaluations);
  descent.refine(b, t, std::numeric_limits<double>::infinity());
}

std::vector<std::size_t> judged_fastest(const PlanContext& context, const partitioning::UnitCosts& costs,
                                        IterationModel& model, const partitioning::MemoryFit& fits,
                                        const std::vector<std::pair<double, std::vector<std::size_t>>>& ranked,
                                        const std::vector<std::vector<std::size_t>>& also) {
  if (model.exact()) {
    // The estimate is the simulation: the first of `ranked` is the fastest of them.
    const std::vector<std::size_t>* fastest = &ranked.front().second;
    double least = ranked.front().first;
    IterationSearch judging(context, costs, model, fits, also.size());
    for (const std::vector<std::size_t>& b : also)
      if (const double t = judging.time(b); t < least) least = t, fastest = &b;
    return *fastest;
  }
  std::optional<IterationModel> judge_model = judge_of(model);
  IterationModel& judge_by = judge_model ? *judge_model : model;
  const BoundLanes descended = judge_by.bound_lanes();
  judge_by.set_bound_lanes(BoundLanes::simulated);
  std::vector<std::pair<double, const std::vector<std::size_t>*>> seen;
  const std::vector<std::size_t>* fastest = nullptr;
  double least = std::numeric_limits<double>::infinity();
  auto judge = [&](IterationSearch& judging, const std::vector<std::size_t>& b) {
    if (std::any_of(seen.begin(), seen.end(), [&](const auto& s) { return *s.second == b; })) return;
    const double t = judging.time(b);
    seen.emplace_back(t, &b);
    if (t < least) least = t, fastest = &b;
  };
  IterationSearch judging(context, costs, judge_by, fits, judged_candidates);
  for (const auto& [estimate, b] : ranked) {
    if (judging.spent()) break;
    judge(judging, b);
  }
  const std::size_t by_estimate = seen.size(); // `seen` is in the estimate's order this far
  IterationSearch judging_also(context, costs, judge_by, fits, also.size());
  for (const std::vector<std::size_t>& b : also)
    judge(judging_also, b);
  judge_by.set_bound_lanes(descended);
  std::vector<std::size_t> chosen = *fastest;
  // Where the judge overturned the estimate's ranking, the estimate misjudges splits
  // here, and the judge's own optimum can lie a few cuts from every candidate: the
  // winner settles on the judge too (32 stages of VGG-16 in two pipelines of 32
  // micro-batches on homo-64, estimated 4–13% slow: four cuts a block earlier than
  // where a descent stalled, 0.45% faster).
  if (judge_model && (!judge_model->exact() || fastest != &ranked.front().second))
    settle(context, costs, *judge_model, fits, chosen, least, descent_evaluations(context.stages));
  // Where representatives or a pod judged and every pipeline is affordable, the
  // settled winner and the two best by the estimate and by the judge are simulated in
  // full. The representatives, in lockstep with the pipelines they stand for,
  // misjudge splits whose rings meet at the NICs of servers that hold several stages
  // (6 stages of VGG-16 in 1,666 pipelines of 32 micro-batches on datacenter-10k: one
  // judged at 338.0 ms runs 367.1 ms), and the judge can put the estimate's best
  // behind its own where it is the faster (20 stages of AlexNet in 500 pipelines:
  // DAPPLE's cuts, judged at 80.32 ms, run 77.50 ms; the judge's best 78.84). A full
  // judge from the start instead affords a few candidates and no settle, which on the
  // pod finds more than those hold (14 cells of the planner grid's stage sweep slower).
  if (!judge_by.exact() && model.all_actions() <= max_checked_actions) {
    std::vector<const std::vector<std::size_t>*> checked;
    for (std::size_t k = 0; k < by_estimate && k < checked_candidates; ++k)
      checked.push_back(seen[k].second);
    std::stable_sort(seen.begin(), seen.end(), ByTime()); // now by the judge's
    for (std::size_t k = 0; k < seen.size() && k < checked_candidates; ++k)
      checked.push_back(seen[k].second);
    IterationModel full = model.in_full();
    IterationSearch checking(context, costs, full, fits, 2 * checked_candidates + 1);
    const std::vector<std::size_t> settled = chosen;
    double fastest_in_full = checking.time(settled);
    for (std::size_t k = 0; k < checked.size(); ++k)
      if (*checked[k] != settled && std::none_of(checked.begin(), checked.begin() + static_cast<std::ptrdiff_t>(k),
                                                 [&](const auto* c) { return *c == *checked[k]; }))
        if (const double t = checking.time(*checked[k]); t < fastest_in_full) fastest_in_full = t, chosen = *checked[k];
  }
  return chosen;
}

} // namespace actorpipe::autopipe
