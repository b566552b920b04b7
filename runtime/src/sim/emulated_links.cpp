/// EmulatedLinks: transfers queued on the lanes of their routes.

#include "sim/emulated_links.hpp"

#include <algorithm>

namespace actorpipe::sim {

EmulatedLinks::EmulatedLinks(ClusterSpec cluster)
    : cluster_(std::move(cluster)), topology_(cluster_), free_at_ms_(topology_.lane_count(), 0.0) {}

double EmulatedLinks::arrival_ms(DeviceId from, DeviceId to, std::uint64_t bytes, double now_ms) {
  if (from == to) return now_ms;
  const Route route = topology_.route(from, to);
  std::lock_guard<std::mutex> lock(mutex_);
  double start = now_ms;
  for (std::uint8_t i = 0; i < route.count; ++i)
    start = std::max(start, free_at_ms_[route.lanes[i]]);
  const double end = start + static_cast<double>(bytes) / route.bytes_per_ms;
  for (std::uint8_t i = 0; i < route.count; ++i)
    free_at_ms_[route.lanes[i]] = end;
  return end + route.latency_ms;
}

} // namespace actorpipe::sim
