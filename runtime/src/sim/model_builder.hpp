#pragma once

/// The parts of the engine's model that simulate() and IterationModel build alike, so
/// that the planner's estimate and the simulator price a stage and a ring the same way.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/iteration_model.hpp>

#include "sim/engine.hpp"
#include "sim/topology.hpp"

#include <vector>

namespace actorpipe::sim {

/// The ring a stage's replicas on `devices` all-reduce `bytes` over: ordered by server
/// and switch, as NCCL orders its rings, so that it crosses each server boundary once
/// each way; each lane's bandwidth is divided among the ring steps that cross it.
/// `instances` are the engine's instances that wait for it (all replicas, or one).
Group make_group(const Topology& topology, const ClusterSpec& cluster, std::vector<std::uint32_t> instances,
                 const std::vector<DeviceId>& devices, double bytes);

/// The optimizer step over `parameter_bytes` on `device`: it reads parameters and
/// gradients and reads and writes its state at the device's memory bandwidth.
double optimizer_step_ms(double parameter_bytes, const Device& device, double optimizer_factor);

/// Sets what an instance of stage figures `f` costs on `device`: forward and backward
/// per sample, and the optimizer step.
void set_stage_costs(Instance& instance, const StageFigures& f, const Device& device, double optimizer_factor);

} // namespace actorpipe::sim
