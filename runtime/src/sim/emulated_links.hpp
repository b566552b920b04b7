#pragma once

/// The links between emulated devices in a run: when a transfer of some bytes from one
/// device to another, started now, arrives, and when a stage's all-reduce is done.
/// Transfers are booked on the lanes of their routes (the simulator's topology: device
/// links, PCIe switch uplinks, host bridges, NICs) by the simulator's own rule
/// (lane_booking.hpp): transfers that share a lane queue for it, so contention is real,
/// and a run's transfers take what the simulator says they take. Times are modelled
/// milliseconds. Thread-safe: every stage of a run asks the one instance.

#include "sim/lane_booking.hpp"
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

  /// When a ring all-reduce of `bytes` over `devices` (a stage's replicas), ready at
  /// `now_ms`, is done: the ring and its booking are the simulator's (make_group(),
  /// book_ring()).
  double allreduce_done_ms(const std::vector<DeviceId>& devices, std::uint64_t bytes, double now_ms);

private:
  ClusterSpec cluster_; ///< what topology_ refers to
  Topology topology_;
  std::mutex mutex_;
  std::vector<LaneClock> lanes_;
};

} // namespace actorpipe::sim
