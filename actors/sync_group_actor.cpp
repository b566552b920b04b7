/// Sync-group actor: gradient all-reduce over the replicas of one stage (their sum, each
/// weighted by its share of the batch: the batch mean's gradient).

#include "sync_group_actor.hpp"

#include "messages.hpp"
#include "../runtime/src/train/stage_worker.hpp"

namespace actorpipe::actors {

namespace {

struct SyncState {
  std::vector<train::StageWorker*> replicas;
  std::vector<caf::actor> stages;
  caf::actor job;
  std::size_t arrived = 0;
  static inline const char* name = "sync-group";
};

caf::behavior sync_behavior(caf::stateful_actor<SyncState>* self, std::vector<train::StageWorker*> replicas,
                            std::vector<caf::actor> stages, caf::actor job) {
  self->state.replicas = std::move(replicas);
  self->state.stages = std::move(stages);
  self->state.job = std::move(job);
  return {
      [=](grads_atom, std::uint64_t) {
        auto& st = self->state;
        if (++st.arrived < st.replicas.size()) return;
        st.arrived = 0;
        // Every replica waits for `synced` before it touches its gradients again.
        try {
          train::sum_gradients(st.replicas);
        } catch (const std::exception& e) {
          self->send(st.job, failed_atom::value, std::string("sync group: ") + e.what());
          return;
        }
        for (const caf::actor& stage : st.stages) self->send(stage, synced_atom::value);
      },
  };
}

} // namespace

caf::actor spawn_sync_group(caf::actor_system& system, std::vector<train::StageWorker*> replicas,
                            std::vector<caf::actor> stage_actors, caf::actor job) {
  return system.spawn<caf::detached>(sync_behavior, std::move(replicas), std::move(stage_actors), std::move(job));
}

} // namespace actorpipe::actors
