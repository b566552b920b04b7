#pragma once

/// The discrete-event core of simulate() (simulate_pipeline() prices one pipeline
/// without it, by a dependency pass): stage instances execute their schedule in order as inputs arrive (the
/// chunks of one device in turn, in its list's order); transfers and
/// collectives reserve the lanes they cross in the order they are requested (time order), so a lane busy with one
/// transfer delays the next.

#include <actorpipe/schedule.hpp>
#include <actorpipe/simulator.hpp>

#include "sim/topology.hpp"

#include <vector>

namespace actorpipe::sim {

/// One stage (with chunks, one virtual stage) of one pipeline on its device.
struct Instance {
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  DeviceId device = 0;
  std::size_t processor = 0;        ///< instances on one processor compute in turn
  double forward_ms_per_sample = 0; ///< on this device
  double backward_ms_per_sample = 0;
  double forward_fixed_ms = 0; ///< per action, on this device
  double backward_fixed_ms = 0;
  double input_gradient_share = unmeasured_input_gradient_share; ///< of a backward, an I's
  double send_bytes_per_sample = 0;                              ///< activations to the next stage
  double grad_bytes_per_sample = 0;                              ///< gradients to the previous stage
  Route to_next, to_previous;
  double optimizer_ms = 0;
};

/// The replicas of one stage index and the ring they all-reduce gradients over.
struct Group {
  std::vector<std::uint32_t> instances;
  /// Replicas in the ring: as many as `instances`, or more where the model simulates
  /// one replica for all (IterationModel); the all-reduce waits for `instances` only.
  std::size_t ring = 0;
  std::vector<LaneId> lanes;  ///< every lane the ring crosses
  std::vector<int> lane_uses; ///< how many ring steps cross each of them
  double bytes = 0;           ///< gradients to reduce
  double bytes_per_ms = 0;    ///< bottleneck, shared lanes divided among their uses
  double latency_ms = 0;      ///< per ring step
};

struct Model {
  const Schedule* schedule = nullptr;
  std::size_t stages = 0;
  std::vector<Instance> instances; ///< pipeline-major
  std::size_t processors = 0;      ///< above every Instance::processor
  std::vector<Group> groups;       ///< one per stage
  std::vector<double> lane_bytes_per_ms;
  double action_overhead_ms = 0;
  Stragglers stragglers;
  bool trace = false;
  /// How the pipelines step (Plan::stepping). Lockstep: each stage's step waits for the
  /// all-reduce over all its replicas. Asynchronous: the data is iterations × pipelines
  /// parts; a pipeline's first stage takes the next part whenever it is free, and each
  /// stage steps once its own actions are done, subject only to `stepping.staleness`.
  SyncStepping stepping;
};

struct Outcome {
  /// Lockstep: when every instance finished each step. Asynchronous: when the
  /// (k + 1) · pipelines-th part was done, in the order parts finish.
  std::vector<double> iteration_end_ms;
  std::vector<double> busy_ms; ///< per instance, computing
  std::vector<double> sync_ms; ///< per instance, last backward to step end
  std::vector<double> lane_busy_ms, lane_bytes;
  std::vector<Span> spans;
  std::size_t events = 0;
  std::size_t repeated_iterations = 0; ///< moved on by, not simulated (SimulationReport says why)
};

/// Runs `iterations` iterations of the model.
Outcome run(const Model& model, std::size_t iterations);

/// Ring all-reduce time for a group: 2(n − 1)/n · bytes / bandwidth + 2(n − 1) · latency,
/// of the group's bytes or of `bytes`.
double ring_allreduce_ms(const Group& group);
double ring_allreduce_ms(const Group& group, double bytes);

} // namespace actorpipe::sim
