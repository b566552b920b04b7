#pragma once

/// How a transfer is booked on the lanes it shares with others, one rule for the
/// simulator's engine and a run's emulated links (EmulatedLinks): it starts once every
/// lane of its route is free, from when it is ready on; it holds each lane for its
/// bytes (times the route's share of that lane) at the lane's own bandwidth, so a slow
/// NIC does not hold a fast switch for its whole transfer and the network between
/// servers, non-blocking, holds nothing; it arrives after the route's latency plus its
/// bytes at the route's bottleneck bandwidth.

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

} // namespace actorpipe::sim
