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
///   2. at more than one micro-batch, the exact min-max split of compute plus the sends
///      at each stage's cuts, with sends weighed fully and by half, and under each bound
///      the split that spreads the work evenly (send_aware_split: it balances the steady
///      state, which one micro-batch does not have); the splits of least pipeline latency
///      (the slowest stage once per micro-batch, every stage and send once, the first
///      stage's all-reduce) under a range of bounds on the slowest stage (latency_split);
///      equal unit counts, far from any of these bounds, also with what is left over
///      on the first stages or on the last, and in whole blocks (where several
///      pipelines run, all but the first are not starts but candidates for step 4);
///      where the model is small enough, the min-max split of each stage's compute
///      plus its all-reduce and step, for iterations that the rings end (where there
///      are rings: more than one pipeline), and the min-max split of when each stage's
///      ring and step end (its ring starts once the backwards from its first unit to
///      the model's end are done), and at one micro-batch, where every split computes
///      alike, that of the rings and steps alone, a candidate for step 4 only; and
///      where the splits at boundaries of groups of a few units can be estimated in
///      a sixteenth of the time every split would take (few stages), the best of
///      those;
///   3. from the best two of these by the estimate, cut-by-cut descent on the estimate
///      (iteration_search), within an evaluation budget that grows with the stages and
///      shrinks where each estimate simulates many actions; where a descent stalled
///      before it moved a cut to another stage, that split stays a candidate. Where
///      the simulator ranks, further descents, each on a budget of its own, set out from
///      the third start where the mapper has placed the stages (placement_given), and,
///      where several pipelines run on devices of different speeds, from the min-max
///      compute split that weighs every device alike; then, where the mapper has placed
///      the stages, from the best candidate, relocating any cut, not only the two
///      costliest to send across; where they end (and stall) are candidates too. Where
///      one pipeline runs a schedule without chunks, steps 2 and 3 rank by a closed
///      form of its iteration instead (pipeline_formula.hpp, O(S) whatever the
///      micro-batch count), and FinalistJudge (the estimate's simulated micro-batches,
///      plus the closed form's growth past them, or where the lanes bind, what twice as
///      many simulated show) chooses among the best `formula_finalists` of them and of
///      the two starts the descent set out from, and, where it simulates every
///      micro-batch, of where the best descends once more, handing units on from any of
///      the `polish_givers` heaviest stages (where it then chooses other than the closed
///      form's best, its winner descends on the estimate); step 4 is left out, so that
///      the search costs the same at any micro-batch count. Where every split can be
///      estimated for about as long as the descent's whole budget takes (few units,
///      few stages), steps 2 and 3 give way to that: the estimate's own optimum
///      (where the lanes bind, the larger of it and the estimate extrapolated from
///      twice the micro-batches it simulates). Only the splits that a bound of the
///      estimate from below (IterationModel::least_ms, a pass over the stages) cannot
///      rule out are estimated;
///   4. (candidate_judge.hpp) where the estimate ran representatives rather than every
///      pipeline, or priced micro-batches at the steady state's period (the descent's
///      estimate does so even where the lanes bind, to cost the same at any
///      micro-batch count), the best few splits it found (where it ranked every
///      split, at most two of any one estimate) are judged by simulating
///      every pipeline and micro-batch
///      (when that costs at most `max_judged_actions`; else the slowest
///      representative's pod as itself, where other pipelines share its lanes; else
///      every micro-batch of the representatives where the lanes bind), and the
///      fastest wins: which of two transfers that reach a shared NIC a fraction of a
///      millisecond apart goes first (a pipeline's send or a ring all-reduce) can move
///      the iteration by tens of milliseconds, and only the pipelines as they are
///      decide it. Where the pod judged, or the judge overturned the estimate's
///      ranking, the winner then descends on the judge (settle): its optimum can lie a
///      few units from every candidate. Where representatives or the pod judged and
///      every pipeline costs at most `max_checked_actions`, the settled winner and the
///      two best by the estimate and by the judge are simulated in full, and the
///      fastest of them wins.
/// Where one estimate simulates more than `max_simulated_actions` (the 8 micro-batches
/// it simulates of 64 stages in four kinds of pipeline do), steps 2 and 3 would cost
/// far more than any baseline's search:
/// then the latency splits under a few bounds near the balanced one are the only other
/// candidates, and the pipeline latency, not the simulator, chooses.
/// Where no cut costs anything to send over (infinitely fast links), the iteration
/// depends on the cuts through compute alone: the search then keeps every stage within
/// the exact min-max bound and uses the estimate only to choose among such splits.

#include "common/partitioning/unit_costs.hpp"

#include <actorpipe/iteration_model.hpp>
#include <actorpipe/plugin.hpp>

#include <cstddef>
#include <optional>
#include <vector>

namespace actorpipe::autopipe {

/// Whether the context names a device for every stage of every pipeline (the planner's
/// later rounds pass the mapper's placement; the first knows none).
bool placement_given(const PlanContext& c);

/// The devices and chunks of the context's pipelines (Schedule::place_of answers where
/// each virtual stage sits), as a schedule with no actions.
Schedule chunk_layout(const PlanContext& c);

/// The iteration model of one placement under the context's schedule (GPipe when the
/// context names it, with chunks interleaved 1F1B or ZB-V as their shape says, else
/// 1F1B: sliced and zero-bubble schedules differ from it in how they fill the bubble,
/// not in which cuts balance it), with BoundLanes::priced: a search's estimate costs
/// the same at any micro-batch count.
IterationModel iteration_model(const PlanContext& c, std::vector<std::vector<DeviceId>> placement);

/// Simulated actions of one estimate up to which the search judges candidates and
/// descends by the estimate (about 70 µs an estimate; 64 stages of 8 micro-batches in
/// two kinds of pipeline).
constexpr std::size_t max_simulated_actions = 2048;
/// What an estimate of fewer actions costs as many as, for the search's budgets.
constexpr std::size_t least_estimate_actions = 64;
/// Of the estimates every split could have, the share the splits at groups of units
/// may have (about 4 ms).
constexpr std::size_t grouped_share = 16;
/// The largest S · N² for which the search runs the exact min-max split by compute,
/// ring and step (which weighs only the latest starts of each end).
constexpr std::size_t max_sync_split_steps = 2'000'000;
/// How many of the heaviest stages the closed form's last descent hands units on from
/// (search_cuts, step 3).
constexpr std::size_t polish_givers = 4;
/// How many of the splits the closed form ranks best FinalistJudge judges.
constexpr std::size_t formula_finalists = 8;
/// Where several pipelines run, how finely the latency splits are sought between the
/// bounds beside their best (LatencySplit::between_bounds: 3 more sweeps).
constexpr std::size_t latency_refinements = 2;

/// Whether memory, not time, decides the split: the exact min-max compute split is
/// slower with the devices' memory as a limit than without (or nothing fits).
bool memory_binds(const PlanContext& context, const partitioning::UnitCosts& costs, const IterationModel& model);

/// The number of ways to choose k of n, or `cap` + 1 if it is more than `cap`.
std::size_t choose_up_to(std::size_t n, std::size_t k, std::size_t cap);

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
std::vector<std::size_t> search_cuts(const PlanContext& context, const partitioning::UnitCosts& costs,
                                     IterationModel& model, bool search = true, bool judge = true);

} // namespace actorpipe::autopipe
