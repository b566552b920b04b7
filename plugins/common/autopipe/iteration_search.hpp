#pragma once

/// Cuts moved one at a time for a shorter estimated iteration: coordinate descent over
/// the cuts with IterationModel as the judge, or, where one is given, PipelineFormula
/// (O(S) an estimate whatever the micro-batch count). For each cut in turn it tries the unit
/// boundaries 1, 2, 4, 8 and 16 units away on either side (short of its neighbouring
/// cuts), so that it can leave a shallow basin, and the boundaries between its neighbours that
/// send fewest bytes (left of it, right of it); it keeps the best if that shortens the
/// iteration, and sweeps again. When a sweep changes nothing, it moves a unit of the
/// heaviest stage (or, where that is a single unit, of the next that hold more; or of
/// any of the few heaviest, where it is told: transfer_from_heaviest) to a farther
/// stage, shifting every cut between them, or else one of the cuts that cost most to
/// send across into another stage, and sweeps on; it ends when neither helps, or when
/// its budget is spent: so many evaluations, or `max_search_actions` simulated actions,
/// whichever comes first.
/// Every move keeps both stages it touches in memory and, where a compute limit is
/// given, within it. A descent comes back to splits it has estimated (a cut moved
/// there and back, a second start's path joining the first's: about a tenth of its
/// estimates on the layouts of ResNet-50 on homo-64): on the simulator each split is
/// simulated once, and a revisit counts as an evaluation without simulating; so does a
/// move whose bound from below (IterationModel::least_ms) is already no shorter than
/// the iteration it must beat (on 4 stages of GNMT in four pipelines on hetero-2x8,
/// about half the moves the descents try).

#include "common/autopipe/pipeline_formula.hpp"
#include "common/partitioning/unit_costs.hpp"

#include <actorpipe/iteration_model.hpp>

#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace actorpipe::autopipe {

/// The most actions the estimates of one search simulate (about 70 ms).
constexpr std::size_t max_search_actions = 2'000'000;
/// The evaluations a descent over `stages` stages may spend: more, the more cuts it moves.
constexpr std::size_t descent_evaluations(std::size_t stages) { return 64 + 32 * stages; }
/// How many of the cuts that cost most to send across a descent tries elsewhere.
constexpr std::size_t relocated_cuts = 2;
/// How many stages, of most compute first, a descent tries handing a unit on from
/// where the heaviest stage is a single unit.
constexpr std::size_t transfer_givers = 2;

class IterationSearch {
public:
  /// `fits`: whether a stage's units fit its device's memory.
  /// `formula`, where given, estimates instead of `model` (which still gives the
  /// stages' speeds).
  IterationSearch(const PlanContext& context, const partitioning::UnitCosts& costs, IterationModel& model,
                  partitioning::MemoryFit fits, std::size_t budget, const PipelineFormula* formula = nullptr)
      : costs_(costs), model_(model), fits_(std::move(fits)), budget_(budget), formula_(formula),
        figures_(context.stages), simulated_before_(model.simulated_so_far()) {}

  /// The estimated iteration time of the split at unit boundaries `b`.
  double time(const std::vector<std::size_t>& b) {
    ++evaluations_;
    if (formula_) return formula_->time(b);
    return model_.iteration_ms(figures_of(b));
  }

  /// What time(b) can never come below: on the model, IterationModel::least_ms (a pass
  /// over the stages, not counted as an evaluation); by the formula, nothing.
  double least_time(const std::vector<std::size_t>& b) { return formula_ ? 0.0 : model_.least_ms(figures_of(b)); }
  /// Whether least_time() bounds anything: not where the formula, which costs about as
  /// little, estimates.
  bool bounds() const { return formula_ == nullptr; }

  /// time(b) extrapolated from twice the micro-batches simulated where the lanes bind
  /// (BoundLanes::extrapolated), whatever the model's own setting.
  double extrapolated_time(const std::vector<std::size_t>& b) {
    const BoundLanes own = model_.bound_lanes();
    model_.set_bound_lanes(BoundLanes::extrapolated);
    const double t = time(b);
    model_.set_bound_lanes(own);
    return t;
  }

  /// Whether the lanes bound the steady state of the last time() on the model
  /// (IterationModel::last_lanes_bind).
  bool last_lanes_bind() { return model_.last_lanes_bind(); }

  bool fits(std::size_t s, std::size_t i, std::size_t j) const { return fits_(s, i, j); }
  /// The splits where the descents stalled before a cut moved to another stage, with
  /// their estimates.
  const std::vector<std::pair<double, std::vector<std::size_t>>>& stalled() const { return stalled_; }
  bool spent() const {
    return evaluations_ >= budget_ || model_.simulated_so_far() - simulated_before_ >= max_search_actions;
  }
  std::size_t evaluations() const { return evaluations_; }
  /// relocate() tries every cut, costliest to send across first, not only the
  /// `relocated_cuts` costliest.
  void relocate_every_cut() { relocated_ = std::numeric_limits<std::size_t>::max(); }
  /// transfer() tries the `givers` stages of most compute that hold two units or more,
  /// heaviest first, whether or not the heaviest is one of them.
  void transfer_from_heaviest(std::size_t givers) { givers_ = givers; }

  /// Improves `b` (estimated at `t`) in place; `compute_limit` bounds every stage's
  /// compute on its device (infinity: no bound).
  void refine(std::vector<std::size_t>& b, double& t, double compute_limit) {
    const std::size_t S = b.size() - 1;
    auto allowed = [&](std::size_t k, std::size_t value) {
      return b[k - 1] < value && value < b[k + 1] && fits(k - 1, b[k - 1], value) && fits(k, value, b[k + 1]) &&
             costs_.compute_ms(b[k - 1], value) / model_.stage_speed(k - 1) <= compute_limit &&
             costs_.compute_ms(value, b[k + 1]) / model_.stage_speed(k) <= compute_limit;
    };
    std::vector<std::size_t> options;
    for (bool moved = true; moved && !spent();) {
      moved = false;
      for (std::size_t k = 1; k < S && !spent(); ++k) {
        options.clear();
        for (std::size_t step = 1; step <= 16 && b[k] + step < b[k + 1]; step *= 2)
          options.push_back(b[k] + step);
        for (std::size_t step = 1; step <= 16 && b[k] > b[k - 1] + step; step *= 2)
          options.push_back(b[k] - step);
        options.push_back(quietest(b[k - 1] + 1, b[k]));
        options.push_back(quietest(b[k] + 1, b[k + 1]));
        const std::size_t kept = b[k];
        std::size_t best = kept;
        double best_time = t * (1 - 1e-9);
        for (std::size_t value : options) {
          if (value == kept || !allowed(k, value) || spent()) continue;
          b[k] = value;
          if (const double candidate = tried(b, best_time); candidate < best_time) best_time = candidate, best = value;
          b[k] = kept;
        }
        if (best != kept) {
          b[k] = best;
          t = best_time;
          moved = true;
        }
      }
      if (!moved) moved = transfer(b, t, compute_limit);
      if (!moved) moved = relocate(b, t, compute_limit);
    }
  }

private:
  /// Gives one unit of a stage to another stage, every cut between them shifting by one
  /// unit, where single cuts cannot move the work that far without passing a worse
  /// split. The giver is the stage of most compute on its device; where that is a single
  /// unit, with nothing to give, each of the next `transfer_givers` that hold two units
  /// or more, heaviest first (32 stages of VGG-16 over 312 pipelines of 32 micro-batches
  /// on datacenter-10k, its second stage a single unit and single cuts on a plateau:
  /// two units handed from the fifth stage to the ninth, DAPPLE's split, 0.16% faster).
  /// After transfer_from_heaviest(n), the n heaviest that hold two units or more.
  /// Applies the first giver's best move that shortens the iteration; false when none
  /// does.
  bool transfer(std::vector<std::size_t>& b, double& t, double compute_limit) {
    const std::size_t S = b.size() - 1;
    auto work = [&](std::size_t s) { return costs_.compute_ms(b[s], b[s + 1]) / model_.stage_speed(s); };
    std::vector<std::size_t> order(S);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return work(x) > work(y); });
    auto gives = [&](std::size_t s) { return b[s + 1] - b[s] >= 2; };
    std::vector<std::size_t> givers;
    if (givers_ > 0) {
      for (std::size_t r = 0; r < S && givers.size() < givers_; ++r)
        if (gives(order[r])) givers.push_back(order[r]);
    } else if (gives(order.front()))
      givers.push_back(order.front());
    else
      for (std::size_t r = 1; r < S && givers.size() < transfer_givers; ++r)
        if (gives(order[r])) givers.push_back(order[r]);
    auto within = [&](const std::vector<std::size_t>& c, std::size_t from, std::size_t to) {
      for (std::size_t s = from; s <= to; ++s)
        if (c[s + 1] <= c[s] || !fits(s, c[s], c[s + 1]) ||
            costs_.compute_ms(c[s], c[s + 1]) / model_.stage_speed(s) > compute_limit)
          return false;
      return true;
    };
    std::vector<std::size_t> best, candidate;
    double best_time = t * (1 - 1e-9);
    for (std::size_t g = 0; g < givers.size() && best.empty(); ++g) {
      const std::size_t heavy = givers[g];
      for (std::size_t target = 0; target < S && !spent(); ++target) {
        if (target + 1 == heavy || target == heavy + 1 || target == heavy)
          continue; // single-cut moves cover neighbours
        candidate = b;
        if (target > heavy)
          for (std::size_t k = heavy + 1; k <= target; ++k)
            --candidate[k];
        else
          for (std::size_t k = target + 1; k <= heavy; ++k)
            ++candidate[k];
        if (!within(candidate, std::min(heavy, target), std::max(heavy, target))) continue;
        if (const double c = tried(candidate, best_time); c < best_time) best_time = c, best = candidate;
      }
    }
    if (best.empty()) return false;
    b = std::move(best);
    t = best_time;
    return true;
  }

  /// Moves a cut to another stage: each of the `relocated_cuts` cuts that cost most to
  /// send across (every cut, after relocate_every_cut()) gives way, its two stages
  /// merging, to a new cut inside another stage of two units or more (at its quietest
  /// boundary, or where its compute halves), every cut between shifting one place along. Neither single cuts nor one
  /// unit handed on can merge two stages: 32 stages of VGG-16 over 312 pipelines on datacenter-10k beat every split
  /// that cuts its first blocks' activations, hundreds of megabytes a micro-batch, by a stage that holds them all and
  /// one more cut further on (2.9%). Applies the best such move that shortens the iteration, keeping where the descent
  /// stalled (stalled()); false when none does.
  bool relocate(std::vector<std::size_t>& b, double& t, double compute_limit) {
    const std::size_t S = b.size() - 1;
    if (S < 3) return false; // a cut moved to the other stage is a cut moved
    std::vector<std::size_t> cuts(S - 1);
    for (std::size_t k = 1; k < S; ++k)
      cuts[k - 1] = k;
    auto send_ms = [&](std::size_t k) { return costs_.boundary_bytes(b[k]) * model_.cut_ms_per_byte(k - 1); };
    const std::size_t dropped = std::min(relocated_, cuts.size());
    std::partial_sort(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(dropped), cuts.end(),
                      [&](std::size_t x, std::size_t y) { return send_ms(x) > send_ms(y); });
    // Where each stage of two or more units could take a new cut.
    std::vector<std::size_t> places;
    for (std::size_t s = 0; s < S; ++s) {
      if (b[s + 1] - b[s] < 2) continue;
      const std::size_t quiet = quietest(b[s] + 1, b[s + 1]);
      std::size_t half = b[s] + 1;
      for (std::size_t j = b[s] + 1; j < b[s + 1]; ++j)
        if (std::abs(costs_.compute_ms(b[s], j) - costs_.compute_ms(j, b[s + 1])) <
            std::abs(costs_.compute_ms(b[s], half) - costs_.compute_ms(half, b[s + 1])))
          half = j;
      places.push_back(quiet);
      if (half != quiet) places.push_back(half);
    }
    std::vector<std::size_t> best, candidate;
    double best_time = t * (1 - 1e-9);
    for (std::size_t d = 0; d < dropped && !spent(); ++d) {
      const std::size_t k = cuts[d];
      for (std::size_t place : places) {
        if (spent()) break;
        if (b[k - 1] < place && place < b[k + 1]) continue; // inside the merged stage: a cut moved
        candidate.assign(b.begin(), b.end());
        candidate.erase(candidate.begin() + static_cast<std::ptrdiff_t>(k));
        candidate.insert(std::upper_bound(candidate.begin(), candidate.end(), place), place);
        bool valid = true; // every stage that changed fits and keeps within the limit
        for (std::size_t s = 0; s < S && valid; ++s)
          if (candidate[s] != b[s] || candidate[s + 1] != b[s + 1])
            valid = fits(s, candidate[s], candidate[s + 1]) &&
                    costs_.compute_ms(candidate[s], candidate[s + 1]) / model_.stage_speed(s) <= compute_limit;
        if (!valid) continue;
        if (const double c = tried(candidate, best_time); c < best_time) best_time = c, best = candidate;
      }
    }
    if (best.empty()) return false;
    stalled_.emplace_back(t, std::move(b));
    b = std::move(best);
    t = best_time;
    return true;
  }

  /// The stages' figures of the split at unit boundaries `b` (in a buffer reused).
  const std::vector<StageFigures>& figures_of(const std::vector<std::size_t>& b) {
    const double per_sample = 1.0 / costs_.micro_batch();
    for (std::size_t s = 0; s < figures_.size(); ++s) {
      StageFigures& f = figures_[s];
      f.forward_fixed_ms = costs_.forward_fixed_ms(b[s], b[s + 1]);
      f.backward_fixed_ms = costs_.backward_fixed_ms(b[s], b[s + 1]);
      f.forward_ms = (costs_.forward_ms(b[s], b[s + 1]) - f.forward_fixed_ms) * per_sample;
      f.backward_ms = (costs_.backward_ms(b[s], b[s + 1]) - f.backward_fixed_ms) * per_sample;
      f.output_bytes = costs_.boundary_bytes(b[s + 1]) * per_sample;
      f.parameter_bytes = static_cast<std::uint64_t>(costs_.parameter_bytes(b[s], b[s + 1]));
      f.stash_bytes_per_sample = static_cast<std::uint64_t>(costs_.stash_bytes(b[s], b[s + 1]) * per_sample);
      f.input_gradient_share = costs_.input_gradient_share(b[s], b[s + 1]);
    }
    return figures_;
  }

  /// time(b), simulated once per split (the formula is cheaper than looking it up);
  /// where least_time(b) is already at least `beat`, the time a move must come below,
  /// that bound, counted as an evaluation but not simulated: the move cannot win.
  double tried(const std::vector<std::size_t>& b, double beat) {
    if (formula_) return time(b);
    if (const auto found = tried_.find(b); found != tried_.end()) {
      ++evaluations_;
      return found->second;
    }
    if (const double least = least_time(b); least >= beat) {
      ++evaluations_;
      return least;
    }
    const double t = time(b);
    tried_.emplace(b, t);
    return t;
  }

  /// The boundary in [from, to) that sends fewest bytes; `to` when the range is empty.
  std::size_t quietest(std::size_t from, std::size_t to) const {
    std::size_t best = to;
    for (std::size_t j = from; j < to; ++j)
      if (best == to || costs_.boundary_bytes(j) < costs_.boundary_bytes(best)) best = j;
    return best;
  }

  const partitioning::UnitCosts& costs_;
  IterationModel& model_;
  partitioning::MemoryFit fits_;
  std::size_t budget_;
  const PipelineFormula* formula_;
  std::size_t evaluations_ = 0;
  std::size_t relocated_ = relocated_cuts; ///< how many cuts relocate() tries, costliest first
  std::size_t givers_ = 0;                 ///< how many stages transfer() tries giving from; 0: as transfer() says
  std::vector<StageFigures> figures_;
  std::size_t simulated_before_;
  struct SplitHash {
    std::size_t operator()(const std::vector<std::size_t>& b) const { return boost::hash_range(b.begin(), b.end()); }
  };
  std::unordered_map<std::vector<std::size_t>, double, SplitHash> tried_; ///< the descents' simulated splits
  std::vector<std::pair<double, std::vector<std::size_t>>> stalled_;      ///< where relocate() moved from
};

} // namespace actorpipe::autopipe
