/// Heartbeat actor: pings every worker's stage host; silence past the timeout fails the run.

#include "processes/heartbeat_actor.hpp"

#include <caf/all.hpp>

#include <set>
#include <sstream>

namespace actorpipe::actors {

namespace {

struct HeartbeatState {
  HeartbeatConfig config;
  std::set<std::uint64_t> waiting; ///< ranks whose last heartbeat is unanswered
  static inline const char* name = "heartbeat";
};

using Heartbeat = heartbeat_actor::stateful_pointer<HeartbeatState>;

/// Fails the run for a lost worker (a restart may bring it back), and stops.
void lost(Heartbeat self, const std::string& what) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> lock(st.config.failure->mutex);
    st.config.failure->worker_lost = true;
  }
  self->send(st.config.job, failed_atom::value, what);
  self->quit();
}

heartbeat_actor::behavior_type heartbeat_behavior(Heartbeat self, HeartbeatConfig config) {
  self->state.config = std::move(config);
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) {
        auto& st = self->state;
        for (const auto& [rank, host] : st.config.hosts) {
          if (!st.waiting.insert(rank).second) continue; // its request times out on its own
          self->request(host, st.config.timeout, heartbeat_atom::value,
                        static_cast<std::uint64_t>(st.config.stall_timeout.count()))
              .then(
                  [=, rank = rank](std::string& stuck) {
                    auto& st = self->state;
                    st.waiting.erase(rank);
                    if (stuck.empty()) return;
                    lost(self, st.config.names[rank] + ": " + stuck + " (its thread is stuck)");
                  },
                  [=, rank = rank](caf::error& error) {
                    auto& st = self->state;
                    // A host that is gone is named by its stages' links ending;
                    // only silence is this actor's to report.
                    if (error != caf::sec::request_timeout) return;
                    const double seconds = static_cast<double>(st.config.timeout.count()) / 1000.0;
                    std::ostringstream what;
                    what << st.config.names[rank] << " did not answer a heartbeat within " << seconds
                         << " s (hung, or cut off)";
                    lost(self, what.str());
                  });
        }
        self->delayed_send(self, st.config.timeout / 4, tick_atom::value);
      },
  };
}

} // namespace

heartbeat_actor spawn_heartbeat(caf::actor_system& system, HeartbeatConfig config) {
  return system.spawn(heartbeat_behavior, std::move(config));
}

} // namespace actorpipe::actors
