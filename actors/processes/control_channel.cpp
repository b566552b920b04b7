/// Control plane connections: CAF's middleman, or its OpenSSL module with TLS files.

#include "processes/control_channel.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

namespace actorpipe::actors {

void load_control_plane(caf::actor_system_config& config, const launch::TlsFiles& tls,
                        std::chrono::milliseconds silence) {
  config.load<caf::io::middleman>();
  // CAF's connections say nothing when idle and its handshake waits without end: with
  // heartbeats, a connection silent for `silence` (a peer that accepted and never
  // answers, or one gone without a word) is closed, and a remote_actor() waiting on
  // it returns.
  config.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(250)});
  config.set("middleman.connection-timeout", caf::timespan{silence});
  if (!tls.enabled()) return;
  config.load<caf::openssl::manager>();
  config.openssl_certificate = tls.certificate;
  config.openssl_key = tls.key;
  config.openssl_cafile = tls.authority;
}

void configure_run_system(caf::actor_system_config& config, const launch::TlsFiles* control_plane,
                          std::chrono::milliseconds silence) {
  // The stage actors compute on threads of their own; the job and pipeline actors left
  // to the scheduler are light. Idle workers block instead of polling (work stealing
  // polls every 50 µs), which would take cores from compute.
  config.set("scheduler.policy", caf::atom("sharing"));
  if (!control_plane) return;
  load_control_plane(config, *control_plane, silence);
  add_process_message_types(config);
}

caf::expected<std::uint16_t> publish_gate(caf::actor_system& system, const gate_actor& gate,
                                          const launch::Endpoint& where, const launch::TlsFiles& tls) {
  if (tls.enabled()) return caf::openssl::publish(gate, where.port, where.host.c_str());
  return system.middleman().publish(gate, where.port, where.host.c_str());
}

caf::expected<gate_actor> reach_gate(caf::actor_system& system, const launch::Endpoint& where,
                                     const launch::TlsFiles& tls) {
  if (tls.enabled()) return caf::openssl::remote_actor<gate_actor>(system, where.host, where.port);
  return system.middleman().remote_actor<gate_actor>(where.host, where.port);
}

} // namespace actorpipe::actors
