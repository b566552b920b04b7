#pragma once

/// The planner's estimate of one iteration: what a partitioner or mapper minimises
/// while it searches many candidate cuts for one placement of devices.
///
/// It runs the simulator's own engine and rules (stage times by device speed; sends
/// over the routes and lanes of the topology, each lane carrying one transfer at a
/// time; the ring all-reduce of every stage; the optimizer step) on at most
/// IterationSetup::simulated_micro_batches (8) of the schedule's micro-batches: the
/// first ones and the last, which fill and drain the pipeline and end in the
/// all-reduces. Each micro-batch beyond adds the steady state's period: the most that
/// one processor computes or one lane carries per micro-batch, or, where a stage holds
/// only so many micro-batches in flight (1F1B), the loop from it to the last stage and
/// back per micro-batch it holds. So an estimate costs the same at any micro-batch
/// count, except where the lanes bind the steady state (one carries more per micro-batch
/// than half of what the busiest processor computes): transfers that each wait for every
/// lane they cross leave lanes idle, the more so the longer the pipelines run, and only
/// every micro-batch simulated shows how much; or where a stage's loop with what the
/// lanes carry per micro-batch added outlasts the busiest processor, whose queues at
/// shared lanes lengthen the loop. There an estimate simulates every micro-batch
/// (BoundLanes::simulated), unless the setup asks for the period (BoundLanes::priced):
/// what a search descends by, at a cost that does not grow with the micro-batches,
/// before it judges its last few candidates with every micro-batch where the lanes bind.
/// Where the whole plan is at most IterationSetup::full_simulation_actions forwards and
/// backwards (2,048 unless the setup says otherwise), it runs every pipeline, and with
/// every micro-batch simulated it is exactly simulate()'s iteration. Beyond, it runs one
/// pipeline of each kind of placement (the same link at every cut, the same device
/// speeds; at most four, the slowest):
///   - the slowest computes each stage at its slowest replica's speed, which all wait for;
///   - sends take the representatives' own routes, at full speed,
///     but each lane they cross stays busy, per byte of the representative's, for as
///     long as it takes to carry every pipeline's sends across it: pipelines of a kind
///     run alike, so a PCIe switch, host bridge or NIC that several cross shares its
///     throughput among them;
///   - the iteration ends as late as the last pipeline in the longest queue such a
///     shared lane makes;
///   - each stage's gradients are all-reduced over the ring of all its replicas, as
///     simulate() builds it, sharing lanes with the sends and the other rings.
/// When every pipeline is alike and shares no lane with another, that too is what
/// simulate() reports for one iteration; elsewhere it ranks plans as simulate() does
/// (tests/simulator_test.cpp checks all three). A judge of a search's last candidates
/// can ask instead for the slowest representative's pod as itself (in_pod(): the
/// pipelines whose sends share a lane with its sends), beside one representative of
/// each other kind: where pods are alike and meet only in the rings, that is
/// simulate()'s iteration too. docs/simulate.md explains the model.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/export.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/schedule.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace actorpipe {

/// What one stage of a partition costs on the profile's reference device: a
/// micro-batch of n samples computes for forward_fixed_ms + n × forward_ms (the
/// profile's fixed parts, and the rest per sample); bytes per sample unless named.
struct StageFigures {
  double forward_ms = 0; ///< per sample, beyond the fixed part
  double backward_ms = 0;
  double output_bytes = 0; ///< activations leaving the stage (gradients return as many)
  std::uint64_t parameter_bytes = 0;
  std::uint64_t stash_bytes_per_sample = 0;
  std::uint64_t workspace_bytes_per_sample = 0; ///< its units' largest, held one unit at a time
  double forward_fixed_ms = 0;                  ///< per micro-batch, whatever its size
  double backward_fixed_ms = 0;
  /// Of each backward (per sample and fixed), what its I takes; its W takes the rest.
  double input_gradient_share = unmeasured_input_gradient_share;
};

/// Where the lanes bind the steady state: every micro-batch simulated (the
/// estimate's error stays within a few per cent, at a cost that grows with the
/// micro-batches); priced at the period as elsewhere (the same cost at any count;
/// there the estimate can fall a fifth short, as in 32 stages of DenseNet-121 whose
/// transfers pace the pipeline); or extrapolated: the first k and the first 2k
/// micro-batches simulated (k = IterationSetup::simulated_micro_batches), and each
/// one past them adding what each of the second k added, at the cost of 3k at any
/// count (of at most 3k, every one simulated). Transfers that wait for every lane they cross leave lanes idle, which
/// the period misses and the second k show (24 stages of VGG-16 in one pipeline of 32 micro-batches on pairs-4x8:
/// priced 24% short, enough to rank it first).
enum class BoundLanes { simulated, priced, extrapolated };

/// What stays fixed while a search moves cuts: where each stage of each pipeline runs
/// and the schedule of one pipeline.
struct IterationSetup {
  std::vector<std::vector<DeviceId>> devices; ///< devices[pipeline][stage]
  Schedule schedule;                          ///< one pipeline's micro-batches and actions
  double action_overhead_ms = 0;              ///< fixed cost of every forward or backward
  double optimizer_factor = 1;                ///< bytes of gradients and optimizer state per parameter byte
  /// Up to this many forwards and backwards in all (every pipeline's), every pipeline
  /// is simulated as itself.
  std::size_t full_simulation_actions = 2048;
  /// Of a schedule with more micro-batches, the first this many − 1 and the last are
  /// simulated, and each of the others adds the steady state's period: an estimate
  /// costs as much at any micro-batch count. 0: every micro-batch is simulated.
  std::size_t simulated_micro_batches = 8;
  BoundLanes bound_lanes = BoundLanes::simulated;
  /// Where representatives run: the slowest one's pod (every pipeline whose sends share
  /// a lane with its sends) is simulated as itself, beside one representative of each
  /// other kind, so that the pipelines queueing at those lanes fall in and out of step
  /// as they do in simulate(), rather than in the lockstep one representative assumes.
  bool whole_pod = false;
};

class ACTORPIPE_EXPORT IterationModel {
public:
  /// The setup must be valid for the cluster (every device index in range, one device
  /// per stage of each pipeline, a schedule of as many stages).
  IterationModel(const ClusterSpec& cluster, IterationSetup setup);
  ~IterationModel();
  IterationModel(IterationModel&&) noexcept;
  IterationModel& operator=(IterationModel&&) noexcept;

  /// Stage s's speed relative to the reference device: its slowest replica's.
  double stage_speed(std::size_t stage) const;
  /// Device memory of stage s: its smallest replica's.
  std::uint64_t stage_memory(std::size_t stage) const;
  /// Milliseconds one byte takes across the cut after stage `cut`, forward or
  /// backward, whichever is slower, each lane's bandwidth divided among the pipelines
  /// whose sends at this cut cross it; and the latency. What a search can weigh a cut's
  /// bytes with before it runs iteration_ms().
  double cut_ms_per_byte(std::size_t cut) const;
  double cut_latency_ms(std::size_t cut) const;

  /// What stage s spends after its last backward, with `parameter_bytes` of
  /// parameters: the all-reduce over the ring of its replicas, then the optimizer step
  /// on its slowest replica. Nothing overlaps the first stage's: it ends last.
  double sync_ms(std::size_t stage, double parameter_bytes) const;

  /// Forwards and backwards one iteration_ms() simulates (every representative's)
  /// where the lanes do not bind, or at any rate with BoundLanes::priced: what one
  /// estimate costs, for a search that must bound its time. Where they bind (above)
  /// and the setup says BoundLanes::simulated, an estimate simulates every micro-batch.
  std::size_t simulated_actions() const;
  /// Forwards and backwards one iteration_ms() simulates where it simulates every
  /// micro-batch: what an estimate costs at most.
  std::size_t most_simulated_actions() const;
  /// Forwards and backwards all iteration_ms() calls so far have simulated.
  std::size_t simulated_so_far() const;
  /// Whether every pipeline and micro-batch is simulated, and the estimate is
  /// simulate()'s iteration.
  bool exact() const;
  /// Forwards and backwards of every pipeline and micro-batch: what an exact estimate
  /// of this setup costs.
  std::size_t all_actions() const;
  /// What estimates from now on do where the lanes bind: a search descends with
  /// BoundLanes::priced and judges its last few candidates with BoundLanes::simulated.
  void set_bound_lanes(BoundLanes bound_lanes);
  BoundLanes bound_lanes() const;
  /// The same setup with every pipeline and micro-batch simulated (exact() holds): a
  /// judge for the last few candidates of a search that ran representatives or a probe.
  IterationModel in_full() const;
  /// The same setup with the slowest representative's pod as itself
  /// (IterationSetup::whole_pod) and every micro-batch simulated where the lanes bind:
  /// a judge where every pipeline would cost too much. Stage-major layouts, four
  /// pipelines to a PCIe switch and a server's worth to its NIC, are where one
  /// representative, in lockstep with the rest, misjudges a split by a few per cent
  /// and the pod does not.
  IterationModel in_pod() const;
  /// Pipelines one estimate simulates: every one, the representatives, or the pod and
  /// the other kinds' representatives.
  std::size_t simulated_pipelines() const;

  /// The estimated iteration time for stages with these figures (one per stage).
  /// Not for concurrent use: it reuses its buffers.
  double iteration_ms(const std::vector<StageFigures>& stages);
  /// What iteration_ms() can never come below for these figures: each processor's
  /// compute over every micro-batch, after (without chunks) a micro-batch's forwards
  /// and sends on the stages before it, and with its stage's wait for the first
  /// gradient after its warm-up (a micro-batch's way to the last stage and back), then
  /// its ring and step, or, where every backward is whole, the backwards back to the
  /// first stage and that stage's ring and step. A pass over the stages, no
  /// simulation: a search estimates only the splits it cannot rule out.
  double least_ms(const std::vector<StageFigures>& stages);
  /// Of the last iteration_ms(): what the micro-batches past those simulated added at
  /// the steady state's period (0 where every one was simulated), which a closed form
  /// of the steady state can stand in for; and the busiest lane's share of that
  /// period, per micro-batch, which no steady state beats.
  double last_steady_ms() const;
  double last_lanes_ms();
  /// Whether the lanes bound the steady state of the last iteration_ms() that priced
  /// micro-batches at the period (false where it simulated every one).
  bool last_lanes_bind();
  /// Micro-batches an estimate simulates where it prices the rest at the period.
  std::size_t brief_micro_batches() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace actorpipe
