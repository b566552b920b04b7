/// Sync-group actor: gradient all-reduce over the replicas of one stage (their sum, each
/// weighted by its share of the batch: the batch mean's gradient).

#include "sync_group_actor.hpp"

#include <caf/all.hpp>

#include <set>
#include <string>

namespace actorpipe::actors {

namespace {

struct SyncState {
  SyncGroupConfig config;
  std::uint64_t step = 0;          ///< the step whose gradients are arriving
  std::set<std::uint64_t> arrived; ///< pipelines whose gradients are ready
  bool broken = false;             ///< a member ended: no reduction any more
  static inline const char* name = "sync-group";
};

using SyncActor = sync_group_actor::stateful_pointer<SyncState>;

void fail(SyncActor self, const std::string& what) {
  auto& st = self->state;
  st.broken = true;
  self->send(st.config.job, failed_atom::value, "sync group of stage " + std::to_string(st.config.stage) + ": " + what);
}

sync_group_actor::behavior_type sync_behavior(SyncActor self, SyncGroupConfig config) {
  self->state.config = std::move(config);
  for (const stage_actor& member : self->state.config.members)
    self->monitor(member);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    if (st.broken) return;
    for (std::size_t p = 0; p < st.config.members.size(); ++p)
      if (st.config.members[p].address() == down.source)
        fail(self,
             "lost its member of pipeline " + std::to_string(p) + " (" + self->system().render(down.reason) + ")");
  });
  return {
      [=](grads_atom, std::uint64_t step, std::uint64_t pipeline) {
        auto& st = self->state;
        if (st.broken) return;
        if (pipeline >= st.config.members.size())
          return fail(self, "gradients from unknown pipeline " + std::to_string(pipeline));
        if (st.arrived.empty()) st.step = step;
        if (step != st.step || !st.arrived.insert(pipeline).second)
          return fail(self, "pipeline " + std::to_string(pipeline) + " sent gradients of step " + std::to_string(step) +
                                " while step " + std::to_string(st.step) + " is being reduced");
        if (st.arrived.size() < st.config.members.size()) return;
        st.arrived.clear();
        // Every replica waits for `synced` before it touches its gradients again.
        try {
          st.config.reduce();
        } catch (const std::exception& e) {
          return fail(self, e.what());
        }
        for (const stage_actor& member : st.config.members)
          self->send(member, synced_atom::value, step);
      },
  };
}

} // namespace

sync_group_actor spawn_sync_group(caf::actor_system& system, SyncGroupConfig config) {
  if (config.detached) return system.spawn<caf::detached>(sync_behavior, std::move(config));
  return system.spawn(sync_behavior, std::move(config));
}

} // namespace actorpipe::actors
