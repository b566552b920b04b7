#pragma once

/// The links between emulated devices in a run: when a transfer of some bytes from one
/// device to another, started now, arrives. A transfer holds every lane of its route
/// (the simulator's topology: device links, PCIe switch uplinks, host bridges, NICs)
/// for bytes / the route's bottleneck bandwidth, after the transfers that hold any of
/// them already, then takes the route's latency: transfers that share a lane queue for
/// it, so contention is real. Times are modelled milliseconds. Thread-safe: every
/// stage of a run asks the one instance.

#include "sim/topology.hpp"

#include <actorpipe/cluster_spec.hpp>

#include <cstdint>
#include <mutex>
#include <vector>

namespace actorpipe::sim {

class EmulatedLinks {
public:
  explicit EmulatedLinks(ClusterSpec cluster);

  /// When `bytes` sent from `from` to `to` at `now_ms` arrive; `now_ms` for a device to
  /// itself.
  double arrival_ms(DeviceId from, DeviceId to, std::uint64_t bytes, double now_ms);

private:
  ClusterSpec cluster_; ///< what topology_ refers to
  Topology topology_;
  std::mutex mutex_;
  std::vector<double> free_at_ms_; ///< by lane: when it is free of the transfers that hold it
};

} // namespace actorpipe::sim
