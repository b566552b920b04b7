#pragma once

/// Models and clusters drawn from seeds, for the planner grid's held-out cells: cases
/// no planner was tuned on, so that a grid over them shows what a tuned one hides.
///
/// Models: chains of 50 to 2,000 blocks whose times, activations and parameters are
/// drawn from wide (log-uniform) distributions, and graphs with branches (skip and
/// parallel paths, as in ResNets, DenseNets and Inception), put in execution order,
/// where the bytes crossing each boundary are every tensor produced before it and used
/// after it. Clusters: two to four device generations of servers of 2 to 8 devices,
/// PCIe switches shared by 2 to 8 of them, NVLink on some servers, slow or fast NICs.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/model_profile.hpp>

#include <cstdint>

namespace actorpipe::bench {

/// A chain of `blocks` blocks drawn from `seed`.
ModelProfile generated_chain(std::uint64_t seed, std::size_t blocks);

/// A graph of `layers` layers with branches, drawn from `seed`, as its blocks in
/// execution order.
ModelProfile generated_graph(std::uint64_t seed, std::size_t layers);

/// A cluster of at most `most_devices` devices drawn from `seed`; valid.
ClusterSpec generated_cluster(std::uint64_t seed, std::size_t most_devices);

} // namespace actorpipe::bench
