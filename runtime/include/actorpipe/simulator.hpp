#pragma once

/// The discrete-event simulator: the planner's cost model and `actorpipe simulate`.
///
/// It runs the schedule of every stage of every pipeline on the mapped devices: block
/// times scaled by each device's speed; activations and gradients sent along the path
/// between two devices, holding every shared resource on it (device link, PCIe switch,
/// host bridge, inter-socket link, NIC) so that contention shows; each stage's gradients
/// all-reduced over a ring of its replicas on the real links; then the optimizer step.
/// Time is virtual (milliseconds); nothing is computed.

#include <actorpipe/export.hpp>
#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/cuda_graphs.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/schedule.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe {

struct JobSpec;

/// With `probability`, a forward or backward is delayed by `delay_ms` (on one device, or
/// on any when `device` is empty): transient slowness such as preemption or a GC pause.
struct RandomDelay {
  double probability = 0;
  double delay_ms = 0;
  std::optional<DeviceId> device;
};

/// A device that computes `factor` times slower while a step starts in [from_ms, to_ms).
struct SlowWindow {
  DeviceId device = 0;
  double factor = 1;
  double from_ms = 0;
  double to_ms = 0;
};

struct Stragglers {
  std::vector<RandomDelay> delays;
  std::vector<SlowWindow> windows;
  std::uint64_t seed = 0; ///< the same seed gives the same delays
  bool empty() const { return delays.empty() && windows.empty(); }
};

/// Parses a straggler spec (docs/simulate.md), entries separated by ';':
///   "delay:p=0.05,ms=20"                      any device, 5% of steps, +20 ms
///   "delay:device=fast/gpu3,p=0.1,ms=5"       one device
///   "slow:device=slow/gpu0,factor=3,from=100ms,to=2s"
/// Devices are named as in the cluster, or by index.
ACTORPIPE_EXPORT Result<Stragglers> parse_stragglers(std::string_view spec, const ClusterSpec& cluster);

struct SimulationOptions {
  std::size_t iterations = 1;
  double action_overhead_ms = 0; ///< fixed cost of every forward or backward
  double optimizer_factor = 1;   ///< bytes of gradients and optimizer state per parameter byte
  /// train.cuda_graphs: which stages on CUDA devices replay CUDA graphs, which hold
  /// memory of their own for each micro-batch in flight (DeviceReport::workspace_bytes).
  /// Off unless a job's options are given: a plan alone says nothing of how it runs.
  CudaGraphs cuda_graphs = CudaGraphs::off;
  Stragglers stragglers;
  bool trace = false; ///< collect spans for write_trace
  /// Per device, the processor that computes for it; devices on one processor run one
  /// action (or optimizer step) at a time, as stage actors sharing a CPU core do. Empty:
  /// every device computes on its own.
  std::vector<std::size_t> processors;
};

/// One stage index, over its replicas in every pipeline.
struct StageReport {
  double forward_ms = 0; ///< per full micro-batch, slowest replica
  double backward_ms = 0;
  double busy = 0;    ///< fraction of the run its slowest replica computes
  double bubble = 0;  ///< 1 − busy: idle waiting for inputs, transfers or sync
  double sync_ms = 0; ///< per iteration, from the last backward to the step's end
};

struct DeviceReport {
  DeviceId device = 0;
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  double busy = 0; ///< fraction of the run computing (with chunks, for all the device's chunks)
  std::uint64_t parameter_bytes = 0;
  std::uint64_t optimizer_bytes = 0;
  std::uint64_t activation_bytes = 0; ///< peak stash under the schedule
  /// What its largest micro-batch holds while it runs; replaying CUDA graphs, what the
  /// graphs of every micro-batch it holds at once keep besides their stash.
  std::uint64_t workspace_bytes = 0;
  std::uint64_t peak_memory_bytes = 0; ///< all of the above
  std::uint64_t memory_capacity = 0;
};

/// A shared resource that carried traffic, one direction of it.
struct LinkReport {
  std::string name; ///< "fast/switch0 up", "slow/nic0 in"
  double busy = 0;  ///< fraction of the run in use
  double bytes = 0; ///< carried during the run
};

/// A span on the timeline, for traces.
struct Span {
  std::string name;     ///< "F3", "B3", "send F3", "allreduce", "step"
  std::size_t pipeline; ///< trace process
  std::size_t track;    ///< stage; the kind picks the stage's thread
  /// Each stage has a trace thread per kind, so that sends and syncs overlap compute.
  enum class Kind { compute, send, sync } kind;
  double start_ms;
  double duration_ms;
  std::size_t iteration; ///< 0-based; the trace calls it step iteration + 1, as a run does
};

struct SimulationReport {
  std::size_t iterations = 0;
  double total_ms = 0;
  double iteration_time_ms = 0;     ///< mean
  std::vector<double> iteration_ms; ///< each iteration, first to last
  double samples_per_s = 0;
  std::vector<StageReport> stages;
  std::vector<DeviceReport> devices; ///< pipeline-major: devices[p · stages + s]
  std::vector<LinkReport> links;     ///< busiest first; only those that carried traffic
  std::vector<Span> spans;           ///< when options.trace
  std::size_t events = 0;            ///< processed, for the curious and the benchmarks
  /// Of the iterations, those not simulated event by event: in lockstep without
  /// stragglers, once the run stands as it stood an iteration before, each iteration
  /// repeats the last, and the run moves on by whole iterations (their events counted
  /// above as if processed). None with a trace, which shows every iteration.
  std::size_t repeated_iterations = 0;
};

/// A job's own simulation settings ([simulate], the overhead of [plan], the optimizer's
/// state, the job's seed for stragglers), as `actorpipe simulate` and scripts use them.
/// An error is about simulate.stragglers, not yet placed: callers put the place in front
/// (job.where("simulate.stragglers"), or the flag that gave it).
ACTORPIPE_EXPORT Result<SimulationOptions> simulation_options(const JobSpec& job);

/// Simulates `plan` (its devices, micro-batches and schedule) for options.iterations.
/// Fails with bad input when the plan or schedule does not validate.
ACTORPIPE_EXPORT Result<SimulationReport> simulate(const Plan& plan, const ModelProfile& profile,
                                                   const ClusterSpec& cluster, const SimulationOptions& options);

/// One pipeline alone, on stages with the given per-sample forward and backward times
/// and per-sample transfer times between neighbours (no contention, no sync, no step):
/// what a partitioner or scheduler needs to compare candidate cuts quickly. The
/// schedule must be valid. Agrees with simulate() on a plan without shared links.
/// With chunks, times are per virtual stage and sends per boundary between virtual
/// stages (none between two on one device); busy times are per device.
/// `input_gradient_share`: per (virtual) stage, what an I takes of its backward (W the
/// rest); empty: the unmeasured share, half.
struct PipelineTiming {
  double makespan_ms = 0;
  std::vector<double> busy_ms;    ///< per device of the schedule (per stage without chunks)
  std::size_t critical_stage = 0; ///< the device whose idle time is least
};
ACTORPIPE_EXPORT PipelineTiming simulate_pipeline(const Schedule& schedule,
                                                  const std::vector<double>& forward_ms_per_sample,
                                                  const std::vector<double>& backward_ms_per_sample,
                                                  const std::vector<double>& send_ms_per_sample,
                                                  double action_overhead_ms = 0,
                                                  const std::vector<double>& input_gradient_share = {});

/// The report's spans as a Chrome/Perfetto trace (JSON): one process per pipeline, one
/// thread per stage for compute and one for its sends and sync.
ACTORPIPE_EXPORT std::string trace_json(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster);

} // namespace actorpipe
