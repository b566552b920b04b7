/// EmulatedLinks: transfers and all-reduces queued on the lanes they cross.

#include "sim/emulated_links.hpp"

#include "sim/lane_booking.hpp"
#include "sim/model_builder.hpp"

#include <algorithm>

namespace actorpipe::sim {

EmulatedLinks::EmulatedLinks(ClusterSpec cluster)
    : cluster_(std::move(cluster)), topology_(cluster_), lanes_(topology_.lane_count()) {
  for (LaneId lane = 0; lane < topology_.lane_count(); ++lane)
    lanes_[lane].bytes_per_ms = topology_.bytes_per_ms(lane);
}

double EmulatedLinks::arrival_ms(DeviceId from, DeviceId to, std::uint64_t bytes, double now_ms) {
  if (from == to) return now_ms;
  const Route route = topology_.route(from, to);
  std::lock_guard<std::mutex> lock(mutex_);
  return book_transfer(route, static_cast<double>(bytes), now_ms, lanes_).arrival_ms;
}

double EmulatedLinks::allreduce_done_ms(const std::vector<DeviceId>& devices, std::uint64_t bytes, double now_ms) {
  const Group ring = make_group(topology_, cluster_, {}, devices, static_cast<double>(bytes));
  if (ring.ring < 2 || bytes == 0) return now_ms;
  std::lock_guard<std::mutex> lock(mutex_);
  return book_ring(ring, now_ms, lanes_).arrival_ms;
}

} // namespace actorpipe::sim
