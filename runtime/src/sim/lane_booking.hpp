#pragma once

/// How a transfer is booked on the lanes it shares with others, one rule for the
/// simulator's engine and a run's emulated links (EmulatedLinks): it starts once every
/// lane of its route is free, from when it is ready on; it holds each lane for its
/// bytes (times the route's share of that lane) at the lane's own bandwidth, so a slow
/// NIC does not hold a fast switch for its whole transfer and the network between
/// servers, non-blocking, holds nothing; it arrives after the route's latency plus its
/// bytes at the route's bottleneck bandwidth. A stage's ring all-reduce is booked alike
/// (book_ring): it starts once every lane of its ring is free and holds each for the
/// ring steps that cross it.

#include "sim/engine.hpp"
#include "sim/topology.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace actorpipe::sim {

struct Booking {
  double start_ms = 0;
  double arrival_ms = 0;
};

/// A lane as bookings see it, both figures side by side: a booking reads them together.
struct LaneClock {
  double free_at_ms = 0; ///< when the transfers that hold it let it go
  double bytes_per_ms = 0;
};

/// Clocks for lanes of these bandwidths, all free from the start.
inline std::vector<LaneClock> lane_clocks(const std::vector<double>& bytes_per_ms) {
  std::vector<LaneClock> lanes(bytes_per_ms.size());
  for (std::size_t l = 0; l < lanes.size(); ++l)
    lanes[l].bytes_per_ms = bytes_per_ms[l];
  return lanes;
}

/// Books `bytes` over `route`, ready at `ready_ms`, and moves its lanes' clocks on.
inline Booking book_transfer(const Route& route, double bytes, double ready_ms, std::vector<LaneClock>& lanes) {
  // Two running maxima, lanes in pairs: the loads of a pair do not wait on each other.
  double start = ready_ms, other = ready_ms;
  std::uint8_t l = 0;
  for (; l + 1 < route.count; l += 2) {
    start = std::max(start, lanes[route.lanes[l]].free_at_ms);
    other = std::max(other, lanes[route.lanes[l + 1]].free_at_ms);
  }
  if (l < route.count) start = std::max(start, lanes[route.lanes[l]].free_at_ms);
  start = std::max(start, other);
  for (l = 0; l < route.count; ++l) {
    LaneClock& lane = lanes[route.lanes[l]];
    lane.free_at_ms = start + bytes * route.share[l] / lane.bytes_per_ms;
  }
  return {start, start + route.latency_ms + (std::isinf(route.bytes_per_ms) ? 0.0 : bytes / route.bytes_per_ms)};
}

/// Books `group`'s ring all-reduce of its bytes, ready at `ready_ms`, as book_transfer()
/// books a transfer; `arrival_ms` is when it is done (ring_allreduce_ms() after its
/// start).
inline Booking book_ring(const Group& group, double ready_ms, std::vector<LaneClock>& lanes) {
  Booking b;
  b.start_ms = ready_ms;
  for (const LaneId lane : group.lanes)
    b.start_ms = std::max(b.start_ms, lanes[lane].free_at_ms);
  b.arrival_ms = b.start_ms + ring_allreduce_ms(group);
  const double n = static_cast<double>(group.ring);
  for (std::size_t l = 0; l < group.lanes.size(); ++l) {
    LaneClock& lane = lanes[group.lanes[l]];
    lane.free_at_ms = b.start_ms + group.lane_uses[l] * 2.0 * (n - 1) / n * group.bytes / lane.bytes_per_ms;
  }
  return b;
}

} // namespace actorpipe::sim
