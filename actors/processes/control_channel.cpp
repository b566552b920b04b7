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
