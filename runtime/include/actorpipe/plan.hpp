#pragma once

/// A plan: how a job is cut into stages, where each stage of each pipeline runs, how
/// each batch is split into micro-batches, and what the planner predicts of it.

#include <actorpipe/export.hpp>
#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/recompute.hpp>
#include <actorpipe/schedule.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe {

/// What the planner predicts of one stage index (over all its pipelines' replicas),
/// from simulating one iteration.
struct StageEstimate {
  double forward_ms = 0; ///< per full micro-batch on the slowest replica's device
  double backward_ms = 0;
  double compute_ms = 0; ///< forward_ms + backward_ms
  double bubble = 0;     ///< fraction of the iteration the slowest replica is idle
  std::uint64_t parameter_bytes = 0;
  std::uint64_t optimizer_bytes = 0;  ///< gradients and optimizer state
  std::uint64_t activation_bytes = 0; ///< stashed activations at the schedule's peak
  std::uint64_t workspace_bytes = 0;  ///< held by the micro-batch computing, beyond its stash
  std::uint64_t memory_bytes = 0;     ///< all of the above
};

/// One stage index: the same range of the model in every pipeline.
struct StagePlan {
  Cut begin; ///< first unit of the stage
  Cut end;   ///< one past its last unit
  StageEstimate estimate;
  Recompute recompute = Recompute::none; ///< what it keeps between a forward and its backward
};

/// Of the units (sub-blocks where blocks have them) of `stage`, in order, those whose
/// forward it recomputes before their backward instead of keeping what they stash: all
/// under Recompute::full; under Recompute::selective those that stash more bytes per ms
/// of forward than the whole model (the cheap, memory-heavy ones: a GPT block's
/// attention, whose scores grow with the square of the context), so that a unit is
/// recomputed or not wherever the cuts fall and a search can count it; none otherwise.
ACTORPIPE_EXPORT std::vector<bool> recomputed_units(const ModelProfile& profile, const StagePlan& stage);

/// One shape the planner simulated: what `auto` stages, pipelines and micro-batches
/// tried, for the listing that shows why the plan has the shape it has.
struct TriedShape {
  std::size_t stages = 0;
  std::size_t pipelines = 0;
  std::uint32_t micro_batches = 0; ///< asked of the scheduler, per pipeline
  std::uint32_t slices = 1;        ///< what the first micro-batch became (sliced schedules)
  double iteration_time_ms = 0;
  double samples_per_s = 0;
  bool fits = true;           ///< every device holds its stage
  std::string scheduler = {}; ///< whose schedule: plan.scheduler's, or under "auto" the one tried
};

/// How the plan's sync policy lets its pipelines step, as the policy's round 0 says:
/// what the simulator needs to know of the policy.
struct SyncStepping {
  /// Every pipeline steps on its own batches, taking the next part of the data when it
  /// is free, and never waits for the others (SDPipe, asynchronous elastic averaging, a
  /// parameter server). False: every step ends with each stage's replicas synced together.
  bool asynchronous = false;
  /// A parameter server's bound: a pipeline is not answered while it has pushed more
  /// than this many steps ahead of the slowest pipeline with work.
  std::uint64_t staleness = unbounded;
  static constexpr std::uint64_t unbounded = ~std::uint64_t{0};
};

struct ACTORPIPE_EXPORT Plan {
  std::string model;
  std::string cluster;
  std::string partitioner;
  std::string mapper;
  std::string scheduler;
  std::string sync;
  SyncStepping stepping; ///< as plan.sync's round 0 says

  std::size_t pipelines = 1;
  std::vector<StagePlan> stages;
  /// devices[p][s]: the device running stage s of pipeline p.
  std::vector<std::vector<DeviceId>> devices;

  std::uint32_t batch_size = 0; ///< samples per iteration, all pipelines together
  /// What every stage does, in order, each iteration (every pipeline runs the same),
  /// and the micro-batches of one pipeline's share of the batch it feeds (sliced
  /// schedules split the first micro-batch).
  Schedule schedule;

  double iteration_time_ms = 0; ///< predicted by the simulator
  double samples_per_s = 0;

  double balance = 0;           ///< max stage compute / mean stage compute
  double parameter_balance = 0; ///< max stage parameter bytes / mean
  double search_ms = 0;         ///< time the planner took
  std::size_t candidates = 0;   ///< shapes (stages × pipelines × micro-batches) it simulated
  /// The best shapes it simulated, best first (at most `tried_shapes_kept`); this
  /// plan's own shape is the first.
  std::vector<TriedShape> tried;
  static constexpr std::size_t tried_shapes_kept = 5;

  /// Checks shape, ranges and devices against the model and cluster it was made for.
  /// Messages name the stage, pipeline or device ("pipeline 1 stage 2: device 17 ...").
  Status validate(const ModelProfile& profile, const ClusterSpec& cluster) const;
};

/// First and last block a stage touches (inclusive), for reports.
ACTORPIPE_EXPORT std::size_t first_block(const StagePlan& stage);
ACTORPIPE_EXPORT std::size_t last_block(const StagePlan& stage);

/// "3", "3-7", "3.1-7" (block.sub where a stage starts or ends inside a block).
ACTORPIPE_EXPORT std::string describe_blocks(const StagePlan& stage);

/// "4 stages"; with chunks "8 stages (4 devices × 2 chunks in a V)".
ACTORPIPE_EXPORT std::string describe_stages(const Plan& plan);

/// A plan's shape as every command writes it, stages first: "2 stages × 4 pipelines ×
/// 8 micro-batches" ("1 stage"; the micro-batches left out where 0).
ACTORPIPE_EXPORT std::string describe_shape(std::size_t stages, std::size_t pipelines, std::size_t micro_batches = 0);

/// "in lockstep", "pipelines step alone", "pipelines step alone, at most 2 steps ahead".
ACTORPIPE_EXPORT std::string describe_stepping(const SyncStepping& stepping);

} // namespace actorpipe
