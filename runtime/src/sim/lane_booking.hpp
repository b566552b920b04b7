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

/// Books `bytes` over `route`, ready at `ready_ms`: `free_at` (by lane) says when each
/// lane is free and is moved on; `occupied(lane, start_ms, ms, bytes)` hears of each
/// lane's use.
template <class Occupied>
Booking book_transfer(const Route& route, double bytes, double ready_ms, std::vector<double>& free_at,
                      const std::vector<double>& lane_bytes_per_ms, Occupied&& occupied) {
  Booking b;
  b.start_ms = ready_ms;
  for (std::uint8_t l = 0; l < route.count; ++l)
    b.start_ms = std::max(b.start_ms, free_at[route.lanes[l]]);
  b.arrival_ms = b.start_ms + route.latency_ms + (std::isinf(route.bytes_per_ms) ? 0.0 : bytes / route.bytes_per_ms);
  for (std::uint8_t l = 0; l < route.count; ++l) {
    const LaneId lane = route.lanes[l];
    const double lane_bytes = bytes * route.share[l];
    const double ms = lane_bytes / lane_bytes_per_ms[lane];
    free_at[lane] = b.start_ms + ms;
    occupied(lane, b.start_ms, ms, lane_bytes);
  }
  return b;
}

/// Books `group`'s ring all-reduce of its bytes, ready at `ready_ms`, as book_transfer()
/// books a transfer; `arrival_ms` is when it is done (ring_allreduce_ms() after its
/// start).
template <class Occupied>
Booking book_ring(const Group& group, double ready_ms, std::vector<double>& free_at,
                  const std::vector<double>& lane_bytes_per_ms, Occupied&& occupied) {
  Booking b;
  b.start_ms = ready_ms;
  for (const LaneId lane : group.lanes)
    b.start_ms = std::max(b.start_ms, free_at[lane]);
  b.arrival_ms = b.start_ms + ring_allreduce_ms(group);
  const double n = static_cast<double>(group.ring);
  for (std::size_t l = 0; l < group.lanes.size(); ++l) {
    const LaneId lane = group.lanes[l];
    const double lane_bytes = group.lane_uses[l] * 2.0 * (n - 1) / n * group.bytes;
    const double ms = lane_bytes / lane_bytes_per_ms[lane];
    free_at[lane] = b.start_ms + ms;
    occupied(lane, b.start_ms, ms, lane_bytes);
  }
  return b;
}

} // namespace actorpipe::sim
