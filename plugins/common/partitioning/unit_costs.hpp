#pragma once

/// Prefix sums over a profile's units (blocks, or sub-blocks where allowed), shared by
/// the partitioner plugins: what a contiguous range of units costs, per micro-batch,
/// and how unit boundaries become cuts. Header-only: each plugin stays one module.

#include <actorpipe/plugin.hpp>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace actorpipe::partitioning {

class UnitCosts {
public:
  /// `sub_blocks`: whether cuts inside blocks are allowed. Times and bytes are scaled
  /// from the profile's batch to a micro-batch of `micro_batch` samples, times beyond
  /// their fixed parts, which every micro-batch pays in full. Under `recompute`, the
  /// recomputed units' forward counts again in the backward (in its I); a run of them
  /// keeps its input instead of their activations, and holds them again while the
  /// backward runs, one run at a time. Full recomputation makes the whole stage one run.
  /// Selective recomputation takes the units whose activations per ms of forward are
  /// above the whole model's (recomputed_units(), plan.hpp); consecutive ones are a run,
  /// as the plan's simulation counts them (stage_figures()), cut where a stage ends.
  UnitCosts(const ModelProfile& profile, bool sub_blocks, std::uint32_t micro_batch,
            Recompute recompute = Recompute::none)
      : scale_(static_cast<double>(micro_batch) / profile.batch_size), micro_batch_(micro_batch),
        input_bytes_(static_cast<double>(profile.input_bytes) * scale_), recompute_(recompute) {
    double stash_per_ms = 0;
    if (recompute == Recompute::selective) {
      double stash = 0, forward = 0;
      profile.for_each_unit(sub_blocks, [&](const Unit& unit) {
        stash += static_cast<double>(unit.stash_bytes_per_sample);
        forward += unit.forward_ms;
      });
      stash_per_ms = forward > 0 ? stash / forward : 0;
    }
    entries_.reserve(profile.blocks.size() + 1);
    entries_.emplace_back();
    double input = input_bytes_; // of the unit about to come, for one micro-batch
    bool previous_again = false;
    profile.for_each_unit(sub_blocks, [&](const Unit& unit) {
      Entry& e = entries_.back();
      e.begin = unit.begin;
      e.output_bytes = static_cast<double>(unit.output_bytes) * scale_;
      const bool again =
          recompute == Recompute::full ||
          (recompute == Recompute::selective && unit.stash_bytes_per_sample > 0 &&
           (unit.forward_ms <= 0 || static_cast<double>(unit.stash_bytes_per_sample) / unit.forward_ms > stash_per_ms));
      const double forward = unit.forward_fixed_ms + (unit.forward_ms - unit.forward_fixed_ms) * scale_;
      const double stash = static_cast<double>(unit.stash_bytes_per_sample) * micro_batch;
      const double backward = unit.backward_fixed_ms + (unit.backward_ms - unit.backward_fixed_ms) * scale_;
      const double input_gradient =
          unit.backward_ms > 0
              ? input_gradient_part(unit.input_gradient_ms, unit.backward_ms) / unit.backward_ms * backward
              : unmeasured_input_gradient_share * backward;
      const bool run_start = again && !previous_again;
      entries_.push_back({e.forward + forward, e.backward + backward + (again ? forward : 0.0),
                          e.forward_fixed + unit.forward_fixed_ms,
                          e.backward_fixed + unit.backward_fixed_ms + (again ? unit.forward_fixed_ms : 0.0),
                          e.parameters + static_cast<double>(unit.parameter_bytes), e.stash + stash,
                          e.input_gradient + input_gradient + (again ? forward : 0.0),
                          e.again_stash + (again ? stash : 0.0), e.again_input + (run_start ? input : 0.0), Cut{},
                          0.0});
      if (run_start) runs_.push_back({size() - 1, size()});
      if (again) runs_.back().end = size();
      run_of_.push_back(again ? runs_.size() - 1 : no_run);
      previous_again = again;
      input = static_cast<double>(unit.output_bytes) * scale_;
    });
    entries_.back().begin = {profile.blocks.size(), 0};
    // The most any run holds, over 2^k runs from each: a range's largest run in O(1).
    most_.emplace_back();
    for (const Run& r : runs_)
      most_.back().push_back(entries_[r.end].again_stash - entries_[r.start].again_stash);
    for (std::size_t span = 2; span <= runs_.size(); span *= 2) {
      const std::vector<double>& half = most_.back();
      std::vector<double> level(runs_.size() - span + 1);
      for (std::size_t r = 0; r < level.size(); ++r)
        level[r] = std::max(half[r], half[r + span / 2]);
      most_.push_back(std::move(level));
    }
  }

  std::size_t size() const { return entries_.size() - 1; }
  std::uint32_t micro_batch() const { return micro_batch_; }

  /// Units [i, j), per micro-batch on the reference device.
  double forward_ms(std::size_t i, std::size_t j) const { return entries_[j].forward - entries_[i].forward; }
  double backward_ms(std::size_t i, std::size_t j) const { return entries_[j].backward - entries_[i].backward; }
  double compute_ms(std::size_t i, std::size_t j) const { return forward_ms(i, j) + backward_ms(i, j); }
  /// Of backward_ms(i, j), the share a split backward's I takes (W takes the rest).
  double input_gradient_share(std::size_t i, std::size_t j) const {
    const double backward = backward_ms(i, j);
    return backward > 0 ? (entries_[j].input_gradient - entries_[i].input_gradient) / backward
                        : unmeasured_input_gradient_share;
  }
  /// Of forward_ms(i, j) and backward_ms(i, j), what the micro-batch pays whatever its size.
  double forward_fixed_ms(std::size_t i, std::size_t j) const {
    return entries_[j].forward_fixed - entries_[i].forward_fixed;
  }
  double backward_fixed_ms(std::size_t i, std::size_t j) const {
    return entries_[j].backward_fixed - entries_[i].backward_fixed;
  }
  double parameter_bytes(std::size_t i, std::size_t j) const { return entries_[j].parameters - entries_[i].parameters; }
  /// Activations one micro-batch leaves stashed between forward and backward: where
  /// units recompute, the stage's input for theirs.
  double stash_bytes(std::size_t i, std::size_t j) const {
    const double stash = entries_[j].stash - entries_[i].stash;
    if (recompute_ == Recompute::none) return stash;
    const double again = entries_[j].again_stash - entries_[i].again_stash;
    if (recompute_ == Recompute::full) return stash - again + boundary_bytes(i);
    // A run the cut at i enters keeps the stage's input.
    const bool inside_run = i < j && run_of_[i] != no_run && runs_[run_of_[i]].start < i;
    return stash - again + entries_[j].again_input - entries_[i].again_input + (inside_run ? boundary_bytes(i) : 0.0);
  }
  /// The largest run of recomputed units' activations for one micro-batch (cut where
  /// the range ends): what the backward holds again.
  double recomputed_bytes(std::size_t i, std::size_t j) const {
    if (recompute_ == Recompute::full) return entries_[j].again_stash - entries_[i].again_stash;
    if (recompute_ == Recompute::none || i >= j) return 0;
    auto held = [&](std::size_t a, std::size_t b) { return entries_[b].again_stash - entries_[a].again_stash; };
    const std::size_t first = run_of_[i], last = run_of_[j - 1];
    if (first != no_run && first == last) return held(i, j);
    double most = 0;
    // The runs the range cuts, then those wholly inside it: [from, to).
    std::size_t from = static_cast<std::size_t>(
        std::lower_bound(runs_.begin(), runs_.end(), i, [](const Run& r, std::size_t u) { return r.start < u; }) -
        runs_.begin());
    std::size_t to = static_cast<std::size_t>(
        std::upper_bound(runs_.begin(), runs_.end(), j, [](std::size_t u, const Run& r) { return u < r.end; }) -
        runs_.begin());
    if (first != no_run) most = held(i, runs_[first].end), from = first + 1;
    if (last != no_run && runs_[last].end > j) most = std::max(most, held(runs_[last].start, j)), to = last;
    if (from < to) {
      std::size_t level = 0;
      while ((std::size_t{2} << level) <= to - from)
        ++level;
      most = std::max({most, most_[level][from], most_[level][to - (std::size_t{1} << level)]});
    }
    return most;
  }
  /// Activations crossing boundary j (before unit j) for one micro-batch.
  double boundary_bytes(std::size_t j) const { return j == 0 ? input_bytes_ : entries_[j - 1].output_bytes; }

  /// Unit boundaries 0 = b_0 < b_1 < ... < b_S = size() as cuts.
  Partition to_partition(const std::vector<std::size_t>& boundaries) const {
    Partition partition;
    partition.cuts.reserve(boundaries.size());
    for (std::size_t b : boundaries)
      partition.cuts.push_back(entries_[b].begin);
    return partition;
  }

  /// A partition's cuts as unit boundaries (each cut must start a unit of this grain).
  std::vector<std::size_t> to_boundaries(const Partition& partition) const {
    std::vector<std::size_t> boundaries;
    boundaries.reserve(partition.cuts.size());
    for (const Cut& cut : partition.cuts)
      boundaries.push_back(
          static_cast<std::size_t>(std::lower_bound(entries_.begin(), entries_.end(), cut,
                                                    [](const Entry& e, const Cut& c) { return e.begin < c; }) -
                                   entries_.begin()));
    return boundaries;
  }

private:
  /// Entry u: sums over units [0, u) side by side (a range's costs share cache lines),
  /// and where unit u begins and what it sends on; entry size() is the model's end.
  struct Entry {
    double forward = 0, backward = 0, forward_fixed = 0, backward_fixed = 0, parameters = 0, stash = 0,
           input_gradient = 0, again_stash = 0, again_input = 0;
    Cut begin;
    double output_bytes = 0;
  };
  /// Consecutive recomputed units [start, end).
  struct Run {
    std::size_t start = 0, end = 0;
  };
  static constexpr std::size_t no_run = static_cast<std::size_t>(-1);
  double scale_;
  std::uint32_t micro_batch_;
  double input_bytes_;
  Recompute recompute_;
  std::vector<Entry> entries_;
  std::vector<Run> runs_;
  std::vector<std::size_t> run_of_;       ///< per unit, its run, or no_run
  std::vector<std::vector<double>> most_; ///< most_[k][r]: the largest of runs r … r + 2^k − 1
};

/// The largest micro-batch: what memory and per-micro-batch times are sized for.
inline std::uint32_t largest_micro_batch(const PlanContext& context) {
  return context.micro_batch_sizes.empty()
             ? 1
             : *std::max_element(context.micro_batch_sizes.begin(), context.micro_batch_sizes.end());
}

/// Micro-batches whose activations stage s holds at once: all of them under GPipe,
/// at most stages − s under the one-forward-one-backward family.
inline std::size_t in_flight(const PlanContext& context, std::size_t stage) {
  const std::size_t m = std::max<std::size_t>(context.micro_batch_sizes.size(), 1);
  if (context.scheduler == "gpipe") return m;
  return std::min(m, context.stages - stage);
}

/// Whether units [i, j) fit stage s's device memory: their parameters, optimizer state,
/// the stash of each micro-batch in flight and, where they recompute, one micro-batch's
/// activations made again. Searches ask this in their innermost
/// loops, so each stage's micro-batches in flight are worked out once.
class MemoryFit {
public:
  /// `limits`: per stage, the bytes its units must fit in; empty limits nothing.
  MemoryFit(const UnitCosts& costs, const PlanContext& context, std::vector<std::uint64_t> limits)
      : costs_(costs), optimizer_(1.0 + context.optimizer_factor), limits_(std::move(limits)) {
    for (std::size_t s = 0; s < limits_.size(); ++s)
      in_flight_.push_back(static_cast<double>(in_flight(context, s)));
  }
  bool operator()(std::size_t s, std::size_t i, std::size_t j) const {
    return limits_.empty() || costs_.parameter_bytes(i, j) * optimizer_ + costs_.stash_bytes(i, j) * in_flight_[s] +
                                      costs_.recomputed_bytes(i, j) <=
                                  static_cast<double>(limits_[s]);
  }
  bool limited() const { return !limits_.empty(); }

private:
  const UnitCosts& costs_;
  double optimizer_;
  std::vector<std::uint64_t> limits_;
  std::vector<double> in_flight_;
};

/// An error for asking more stages than there are units.
Status check_stage_count(const UnitCosts& costs, const PlanContext& context, const char* granularity);

/// Bytes/s between two devices of one server (a PCIe switch's) and between servers
/// (a NIC's, at most the network's), from the first server: the baselines plan for a
/// homogeneous cluster.
struct Bandwidths {
  double intra_server = 0;
  double inter_server = 0;
  std::size_t devices_per_server = 1;
};
Bandwidths cluster_bandwidths(const ClusterSpec& cluster);

/// Ring all-reduce of `bytes` over n replicas at `bandwidth` bytes/s, in ms.
inline double allreduce_ms(double bytes, std::size_t n, double bandwidth) {
  return n < 2 ? 0.0 : 2.0 * (n - 1) / static_cast<double>(n) * bytes / bandwidth * 1000.0;
}

} // namespace actorpipe::partitioning
