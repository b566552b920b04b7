#pragma once

/// The control plane's connections between the processes of a run: CAF's middleman,
/// plain or, with TLS files, through CAF's OpenSSL module. The coordinator publishes
/// its gate; a worker reaches it; every actor message between them then travels over
/// that connection.

#include "processes/process_protocol.hpp"

#include "launch/process_place.hpp"
#include "launch/tls_files.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>

namespace actorpipe::actors {

/// Loads what the control plane needs into a process's actor system config: the
/// middleman, and with `tls` the OpenSSL module and its files. A connection silent for
/// `silence` (its peer sends heartbeats four times a second) is closed.
void load_control_plane(caf::actor_system_config& config, const launch::TlsFiles& tls,
                        std::chrono::milliseconds silence = std::chrono::seconds(10));

/// The actor system config of a process of a run, one process or several alike: idle
/// scheduler threads block instead of polling; with `control_plane` (a run of several
/// processes), the control plane (load_control_plane) and the messages between them.
void configure_run_system(caf::actor_system_config& config, const launch::TlsFiles* control_plane,
                          std::chrono::milliseconds silence = std::chrono::seconds(10));

/// Publishes `gate` at `where` (port 0: any free one); the port it got.
caf::expected<std::uint16_t> publish_gate(caf::actor_system& system, const gate_actor& gate,
                                          const launch::Endpoint& where, const launch::TlsFiles& tls);

/// The coordinator's gate at `where`, through a connection of this process.
caf::expected<gate_actor> reach_gate(caf::actor_system& system, const launch::Endpoint& where,
                                     const launch::TlsFiles& tls);

} // namespace actorpipe::actors
