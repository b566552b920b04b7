#pragma once

/// AutoPipe-H's search for the cuts of one placement: the whole of partitioner
/// `autopipe`, and what mapper `hetero` prices each of its layouts with, so that a
/// layout is judged by the cuts a placement-aware partitioner will give it.
///
/// The cuts minimise the planner's own estimate of the iteration (IterationModel: the
/// simulator run on one pipeline of each kind of placement, with stage compute on each stage's
/// device and every cut's sends over the links the placement gives it, shared links
/// priced as shared):
///   1. the exact min-max compute split, with memory as a hard limit (balanced_split);
///   2. the exact min-max split of compute plus the sends at each stage's cuts, with
///      sends weighed fully and by half, and under each bound the split that spreads
///      the work evenly (send_aware_split); the splits of least pipeline latency
///      (the slowest stage once per micro-batch, every stage and send once, the first
///      stage's all-reduce) under a range of bounds on the slowest stage (latency_split);
///      and equal unit counts, far from any of these bounds;
///   3. from the best two of these by the estimate, cut-by-cut descent on the estimate
///      (iteration_search), within an evaluation budget that grows with the stages and
///      shrinks where each estimate simulates many actions. Where every split can be
///      estimated for about as long as the descent's whole budget takes (few units,
///      few stages), steps 2 and 3 give way to that: the estimate's own optimum;
///   4. where the estimate ran representatives rather than every pipeline, the best
///      few splits it found are judged by simulating every pipeline (when that costs at
///      most `max_judged_actions`), and the fastest wins: which of two transfers that
///      reach a shared NIC a fraction of a millisecond apart goes first (a pipeline's
///      send or a ring all-reduce) can move the iteration by tens of milliseconds, and
///      only the pipelines as they are decide it.
/// Where one estimate simulates more than `max_simulated_actions` (32 stages of 64
/// micro-batches do), steps 2 and 3 would cost far more than any baseline's search:
/// then the latency splits under a few bounds near the balanced one are the only other
/// candidates, and the pipeline latency, not the simulator, chooses.
/// Where no cut costs anything to send over (infinitely fast links), the iteration
/// depends on the cuts through compute alone: the search then keeps every stage within
/// the exact min-max bound and uses the estimate only to choose among such splits.

#include "common/unit_costs.hpp"
#include "common/balanced_split.hpp"
#include "common/iteration_search.hpp"
#include "common/latency_split.hpp"
#include "common/send_aware_split.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/schedule_builders.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace actorpipe::autopipe {

/// The iteration model of one placement under the context's schedule (GPipe when the
/// context names it, else 1F1B: sliced schedules differ only in their first few
/// micro-batches).
inline IterationModel iteration_model(const PlanContext& c, std::vector<std::vector<DeviceId>> placement) {
  const Schedule schedule = c.scheduler == "gpipe" ? gpipe_schedule(c.stages, c.micro_batch_sizes)
                                                   : one_f_one_b_schedule(c.stages, c.micro_batch_sizes);
  return IterationModel(c.cluster, {std::move(placement), schedule, c.action_overhead_ms, c.optimizer_factor});
}

/// Simulated actions of one estimate up to which the search judges candidates and
/// descends by the estimate (about 70 µs an estimate; 16 stages of 64 micro-batches).
constexpr std::size_t max_simulated_actions = 2048;
/// The most actions (every pipeline's) of a simulation that judges the last
/// candidates, and how many it judges: a few milliseconds each on 10,000 devices.
constexpr std::size_t max_judged_actions = std::size_t{1} << 18;
constexpr std::size_t judged_candidates = 6;

/// The number of ways to choose k of n, or `cap` + 1 if it is more than `cap`.
inline std::size_t choose_up_to(std::size_t n, std::size_t k, std::size_t cap) {
  if (k > n) return 0;
  k = std::min(k, n - k);
  double ways = 1;
  for (std::size_t i = 1; i <= k; ++i) {
    ways = ways * static_cast<double>(n - k + i) / static_cast<double>(i);
    if (ways > static_cast<double>(cap)) return cap + 1;
  }
  return static_cast<std::size_t>(std::llround(ways));
}

/// Every split of the units into `stages` non-empty stages whose units fit each
/// stage's memory, handed to `visit` as boundaries.
template <class Fits, class Visit>
void for_each_split(std::size_t units, std::size_t stages, const Fits& fits, Visit visit) {
  std::vector<std::size_t> b(stages + 1, 0);
  b[stages] = units;
  auto place = [&](auto& self, std::size_t s) -> void { // boundaries b[s..stages-1] still to place
    if (s == stages) return visit(b);
    if (s + 1 == stages) {
      if (b[s] < units && fits(s, b[s], units)) visit(b);
      return;
    }
    for (std::size_t end = b[s] + 1; end + (stages - s - 1) <= units; ++end) {
      if (!fits(s, b[s], end)) continue;
      b[s + 1] = end;
      self(self, s + 1);
    }
  };
  place(place, 0);
}

/// The unit boundaries (0 = b_0 < ... < b_S = N) for the placement `model` was made
/// for; `search` false stops after step 1, `judge` false after step 3 (a mapper that
/// prices many layouts by the estimate).
inline std::vector<std::size_t> search_cuts(const PlanContext& context, const partitioning::UnitCosts& costs,
                                            IterationModel& model, bool search = true, bool judge = true) {
  const std::size_t S = context.stages;
  std::vector<double> speeds(S);
  std::vector<std::uint64_t> memory(S);
  for (std::size_t s = 0; s < S; ++s)
    speeds[s] = model.stage_speed(s), memory[s] = model.stage_memory(s);

  // 1. The exact min-max compute split; when memory rules every split out, time alone
  //    is balanced and the planner reports the overflow.
  std::optional<BalancedSplit> balanced(std::in_place, context, costs, speeds, memory);
  double bound = balanced->min_max_bound();
  if (std::isinf(bound)) {
    memory.clear();
    balanced.emplace(context, costs, speeds, memory);
    bound = balanced->min_max_bound();
  }
  std::vector<std::size_t> best = balanced->spread(bound);
  balanced->quiet_cuts(best, bound);
  context.report(0.2);
  if (!search) return best;

  const partitioning::MemoryFit fits(costs, context, memory);
  const bool simulate = model.simulated_actions() <= max_simulated_actions;
  // The descent's budget grows with the cuts to move, and stops short of two million
  // simulated actions (about 70 ms) where each estimate simulates many.
  IterationSearch descent(
      context, costs, model, fits,
      std::min<std::size_t>(
          64 + 32 * S, std::max<std::size_t>(16, 2'000'000 / std::max<std::size_t>(1, model.simulated_actions()))));
  std::vector<double> ms_per_byte(S, 0.0), latency_ms(S, 0.0); // of the cut before each stage
  bool sends_free = true;
  for (std::size_t s = 1; s < S; ++s) {
    ms_per_byte[s] = model.cut_ms_per_byte(s - 1), latency_ms[s] = model.cut_latency_ms(s - 1);
    sends_free = sends_free && ms_per_byte[s] == 0 && latency_ms[s] == 0;
  }
  if (sends_free) {
    if (!simulate) return best;
    double t = descent.time(best);
    descent.refine(best, t, bound);
    return best;
  }

  // 2. Splits that also count each stage's sends: min-max ones, and ones for the
  //    least pipeline latency under a range of bounds on the slowest stage.
  auto slowness = [&](std::size_t s) { return 1.0 / speeds[s]; };
  auto send = [&](std::size_t s, std::size_t i) { return costs.boundary_bytes(i) * ms_per_byte[s] + latency_ms[s]; };
  std::vector<double> first_sync(costs.size() + 1, -1.0); // the first stage's, by where it ends; −1: not yet known
  auto sync = [&](std::size_t j) {
    if (first_sync[j] < 0) first_sync[j] = model.sync_ms(0, costs.parameter_bytes(0, j));
    return first_sync[j];
  };
  LatencySplit latency(costs, S, context.micro_batch_sizes.size(), slowness, fits, send, sync);
  if (!simulate) {
    double least = latency.latency(best);
    for (std::vector<std::size_t>& candidate : latency.candidates(bound, 1, near_bounds))
      if (const double l = latency.latency(candidate); l < least) least = l, best = std::move(candidate);
    context.report(1.0);
    return best;
  }

  // The best few by the estimate, judged with every pipeline simulated where the
  // estimate ran representatives (step 4); `ranked` is sorted by the estimate, and not
  // empty.
  auto fastest_of = [&](const std::vector<std::pair<double, std::vector<std::size_t>>>& ranked) {
    if (!judge || model.exact() || model.all_actions() > max_judged_actions) return ranked.front().second;
    IterationModel full = model.in_full();
    IterationSearch judging(context, costs, full, fits, judged_candidates);
    std::vector<const std::vector<std::size_t>*> seen;
    const std::vector<std::size_t>* fastest = nullptr;
    double least = std::numeric_limits<double>::infinity();
    for (const auto& [estimate, b] : ranked) {
      if (judging.spent()) break;
      if (std::any_of(seen.begin(), seen.end(), [&](const auto* s) { return *s == b; })) continue;
      seen.push_back(&b);
      if (const double t = judging.time(b); t < least) least = t, fastest = &b;
    }
    return *fastest;
  };
  auto by_estimate = [](const auto& a, const auto& b) { return a.first < b.first; };

  // 2–3 at once where every split costs at most two million simulated actions (about
  // 70 ms) of estimates.
  const std::size_t affordable = 2'000'000 / std::max<std::size_t>(1, model.simulated_actions());
  if (choose_up_to(costs.size() - 1, S - 1, affordable) <= affordable) {
    std::vector<std::pair<double, std::vector<std::size_t>>> every;
    for_each_split(costs.size(), S, fits,
                   [&](const std::vector<std::size_t>& b) { every.emplace_back(descent.time(b), b); });
    if (!every.empty()) {
      std::stable_sort(every.begin(), every.end(), by_estimate);
      context.report(1.0);
      return fastest_of(every);
    }
  }

  std::vector<std::pair<double, std::vector<std::size_t>>> starts{{descent.time(best), best}};
  auto consider = [&](std::vector<std::size_t> candidate) {
    if (candidate.empty()) return;
    for (const auto& start : starts)
      if (start.second == candidate) return;
    starts.emplace_back(descent.time(candidate), std::move(candidate));
  };
  SendAwareSplit min_max(costs, S, slowness, fits, send);
  for (double weight : {1.0, 0.5}) {
    std::vector<std::size_t> candidate = min_max.solve(best, bound, weight);
    consider(min_max.spread(min_max.largest(candidate, weight), weight));
    consider(std::move(candidate));
  }
  for (std::vector<std::size_t>& candidate : latency.candidates(bound, 4, wide_bounds))
    consider(std::move(candidate));
  // Equal unit counts: where the early units are heavy, the front stages take more
  // work, so that the later stages' all-reduces run while they compute. A start the
  // other splits, each near the least bound, never are.
  std::vector<std::size_t> even(S + 1);
  bool even_fits = true;
  for (std::size_t s = 0; s <= S; ++s)
    even[s] = s * costs.size() / S;
  for (std::size_t s = 0; s < S; ++s)
    even_fits = even_fits && fits(s, even[s], even[s + 1]);
  if (even_fits) consider(std::move(even));
  context.report(0.5);

  // 3. Descent on the estimate from the best two starts; the better end wins.
  std::sort(starts.begin(), starts.end(), by_estimate);
  for (std::size_t k = 0; k < starts.size() && k < 2 && !descent.spent(); ++k) {
    auto& [t, b] = starts[k];
    descent.refine(b, t, std::numeric_limits<double>::infinity());
  }
  std::stable_sort(starts.begin(), starts.end(), by_estimate);
  context.report(1.0);
  return fastest_of(starts);
}

} // namespace actorpipe::autopipe
