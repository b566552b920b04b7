#pragma once

/// One candidate shape of a plan (stages × pipelines × micro-batches), carried through
/// partitioner, mapper and scheduler plugins and priced by the simulator. The search
/// over shapes (planner.cpp) compares these.

#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/simulator.hpp>

#include <functional>
#include <memory>
#include <optional>

namespace actorpipe::planning {

struct Shape {
  std::size_t stages = 1;
  std::size_t pipelines = 1;
  std::uint32_t micro_batches = 1;
  std::size_t scheduler = 0; ///< index into Planning::schedulers
};

/// A scheduler the planning may ask: plan.scheduler's, or under "auto" each one found.
struct SchedulerChoice {
  std::string name;
  std::shared_ptr<Scheduler> plugin;
  std::string label; ///< "scheduler 'x' (FILE): "
  Chunking chunking; ///< what it said of its chunks under the job's options
};

/// What every candidate of one planning run shares: the job and its loaded plugins.
struct Planning {
  const JobSpec& job;
  std::shared_ptr<Partitioner> partitioner{};
  std::shared_ptr<Mapper> mapper{};
  /// Empty when the job names a schedule file; several under plan.scheduler = "auto".
  std::vector<SchedulerChoice> schedulers{};
  std::optional<Schedule> schedule_file{};
  std::string partitioner_label{}, mapper_label{}, schedule_file_label{}; ///< "partitioner 'x' (FILE): "
  double optimizer_factor = 1;
  SyncStepping stepping{}; ///< from the sync policy's round 0

  /// The schedule's source for `shape`, as messages name it: "scheduler 'x' (FILE): " or
  /// "schedule file F: ".
  const std::string& scheduler_label(const Shape& shape) const {
    return schedulers.empty() ? schedule_file_label : schedulers[shape.scheduler].label;
  }

  /// The chunks on each device of `shape`'s pipelines: its scheduler's, or the
  /// schedule file's.
  Chunking chunking(const Shape& shape) const {
    return schedulers.empty() ? Chunking{schedule_file->chunks, schedule_file->shape}
                              : schedulers[shape.scheduler].chunking;
  }

  /// Where the job leaves plan.recompute unset: what every stage recomputes in this
  /// search (none first; the planner tries more when no plan fits).
  Recompute unset_recompute = Recompute::none;

  /// What stage `stage` keeps between a forward and its backward: plan.recompute's one
  /// value, or its entry for the stage (with chunks, for the device: plan.stages counts
  /// devices), or unset_recompute.
  Recompute recompute(std::size_t stage) const {
    const std::vector<Recompute>& r = job.plan.recompute;
    if (r.empty()) return unset_recompute;
    return r.size() == 1 ? r.front() : stage < r.size() ? r[stage] : Recompute::none;
  }
};

/// Loads the plugins the job names (and its schedule file, if any).
Result<Planning> prepare(const JobSpec& job, const PluginRegistry& plugins);

struct Candidate {
  Plan plan;
  SimulationReport report;
  /// When some device cannot hold its stage: which, and by how much (need / have).
  std::optional<std::string> overflow;
  double overflow_ratio = 0;
  double fullest = 0;        ///< the largest share of a device's memory in use (> 1: overflow)
  bool memory_bound = false; ///< the partitioner said memory, not time, placed its cuts
};

/// Fits before does not; then more samples/s; then less memory over capacity.
bool better(const Candidate& a, const Candidate& b);

/// Plans and simulates one shape. Plugin failures are errors; not fitting in memory is
/// not (the candidate says so, and the search goes on).
/// `progress` gets the fraction of this shape's search done (the plugins' reports).
Result<Candidate> evaluate(const Planning& planning, const Shape& shape, std::function<void(double)> progress = {});

} // namespace actorpipe::planning
