#pragma once

/// The machines a job runs on: servers, their devices and how they are wired.
///
/// Bandwidths are bytes per second, latencies seconds, memory bytes. A device's
/// `speed` is relative to the reference device of the model profile (2.0 = twice as
/// fast), so a block taking t ms in the profile takes t / speed on that device.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe {

/// The most devices a cluster file may describe, far beyond the simulations it serves
/// (10,000 devices), and a bound on what a mistyped count asks for.
inline constexpr std::uint64_t max_cluster_devices = std::uint64_t{1} << 20;

/// A PCIe switch: devices behind it share its uplink to the host bridge.
struct PcieSwitch {
  double bandwidth = 0;        ///< uplink, bytes/s
  std::size_t host_bridge = 0; ///< index into Server::host_bridges

  friend bool operator==(const PcieSwitch&, const PcieSwitch&) = default;
};

/// A CPU root complex (socket); switches under different bridges talk over
/// Server::inter_bridge_bandwidth (QPI/UPI).
struct HostBridge {
  double bandwidth = 0; ///< bytes/s

  friend bool operator==(const HostBridge&, const HostBridge&) = default;
};

struct Server {
  std::string name;
  /// The host name of the machine this server is (`host`, or one of `hosts` for a
  /// server with a count): a worker process of `actorpipe launch` that runs this
  /// server's devices must be on it. Empty: any machine.
  std::string host;
  std::vector<PcieSwitch> pcie_switches;
  std::vector<HostBridge> host_bridges;
  double inter_bridge_bandwidth = 0; ///< bytes/s between host bridges
  double nvlink_bandwidth = 0;       ///< bytes/s per NVLink peer pair; 0 when none
  std::size_t nics = 1;              ///< network interfaces shared by the server's devices
  double nic_bandwidth = 0;          ///< bytes/s per NIC

  friend bool operator==(const Server&, const Server&) = default;
};

struct Device {
  std::string name; ///< unique in the cluster, "SERVER/gpuN" ("SERVER/cpuN" for kind "cpu")
  /// "cpu", "emulated" (the CPU at this device's modelled speed), or a GPU's kind such as
  /// "H100": a run puts a stage on that server's CUDA device N ("SERVER/gpuN")
  std::string kind;
  double speed = 1.0; ///< relative to the profile's reference device
  std::uint64_t memory_bytes = 0;
  double memory_bandwidth = 500e9; ///< bytes/s; bounds the optimizer step
  std::size_t server = 0;          ///< index into ClusterSpec::servers
  std::size_t pcie_switch = 0;     ///< index into that server's pcie_switches
  int nvlink_group = -1;           ///< devices of one group share NVLink; -1 when none

  /// Whether a run computes on it with CUDA: every kind but "cpu" and "emulated".
  bool computes_on_cuda() const { return kind != "cpu" && kind != "emulated"; }

  friend bool operator==(const Device&, const Device&) = default;
};

/// The network between servers: each NIC reaches a non-blocking switch.
struct Network {
  double bandwidth = 0; ///< bytes/s of one link
  double latency = 0;   ///< seconds per message

  friend bool operator==(const Network&, const Network&) = default;
};

using DeviceId = std::size_t; ///< index into ClusterSpec::devices

struct ACTORPIPE_EXPORT ClusterSpec {
  std::string name;
  Network network;
  std::vector<Server> servers;
  std::vector<Device> devices; ///< every device, grouped by server in server order

  /// Checks sizes, speeds, bandwidths and that every index points at something.
  /// Messages name the entry ("server 'fast-1' pcie switch 2").
  Status validate() const;

  /// The devices of one server, in order.
  std::vector<DeviceId> devices_of(std::size_t server) const;

  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;
};

} // namespace actorpipe
