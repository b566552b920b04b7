#pragma once

/// The cluster as the simulator sees it: one-directional lanes of shared resources
/// (each device's link, PCIe switch uplinks, host bridges, the inter-socket link, NICs,
/// NVLink ports) and the route between any two devices over them.

#include <actorpipe/cluster_spec.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace actorpipe::sim {

using LaneId = std::uint32_t;

/// The lanes a transfer holds, its bottleneck bandwidth and its latency.
struct Route {
  std::array<LaneId, 12> lanes{};
  /// Bytes each lane carries per byte of this transfer: 1, or more where one transfer
  /// stands for the same transfer of several pipelines (IterationModel).
  std::array<float, 12> share = ones();
  std::uint8_t count = 0;
  double bytes_per_ms = std::numeric_limits<double>::infinity();
  double latency_ms = 0;
  void add(LaneId lane, double lane_bytes_per_ms) {
    lanes[count++] = lane;
    bytes_per_ms = std::min(bytes_per_ms, lane_bytes_per_ms);
  }
  static constexpr std::array<float, 12> ones() {
    std::array<float, 12> out{};
    out.fill(1.0f);
    return out;
  }
};

class Topology {
public:
  explicit Topology(const ClusterSpec& cluster);

  std::size_t lane_count() const { return bytes_per_ms_.size(); }
  double bytes_per_ms(LaneId lane) const { return bytes_per_ms_[lane]; }
  /// "fast/switch0 up", "slow/nic0 in", "fast/gpu3 out" — for reports.
  std::string lane_name(LaneId lane) const;

  /// Devices on one server under one switch talk through their own links; across
  /// switches of one socket through the switches' uplinks; across sockets also through
  /// the host bridges and the inter-socket link; across servers through each side's
  /// path to its NIC (the NIC of the device's switch, round robin) and the network,
  /// which is non-blocking. NVLink peers use their NVLink ports only.
  Route route(DeviceId from, DeviceId to) const;

private:
  /// Lane bases per server, so that lane ids are computed, not looked up.
  struct ServerLanes {
    LaneId switches = 0, bridges = 0, inter_bridge = 0, nics = 0;
  };
  LaneId device_link(DeviceId d, bool in) const { return static_cast<LaneId>(2 * d + (in ? 1 : 0)); }
  LaneId nvlink_port(DeviceId d, bool in) const { return nvlink_base_ + static_cast<LaneId>(2 * d + (in ? 1 : 0)); }
  /// Adds the lanes from a device up to its NIC (or from the NIC down to it).
  void towards_nic(Route& route, DeviceId d, bool in) const;

  const ClusterSpec& cluster_;
  std::vector<ServerLanes> servers_;
  std::vector<double> bytes_per_ms_;
  std::vector<std::uint32_t> lane_owner_; ///< device or server of each lane, for names
  LaneId nvlink_base_ = 0;
};

} // namespace actorpipe::sim
