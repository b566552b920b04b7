/// Job actor: steps over all pipelines, and failure handling.

#include "job_actor.hpp"

#include "messages.hpp"

#include <map>

namespace actorpipe::actors {

namespace {

/// A step handed to the pipelines and not yet answered: the run queues the next step
/// while one runs.
struct Pending {
  caf::typed_response_promise<double> reply;
  std::size_t answered = 0; ///< pipelines done
  double loss_sum = 0;
};

struct JobState {
  std::vector<caf::actor> pipelines;
  std::vector<std::uint32_t> shares;
  std::map<caf::actor_addr, std::string> names;
  std::shared_ptr<Failure> failure;
  std::map<std::uint64_t, Pending> steps;
  static inline const char* name = "job";
};

using JobActor = caf::stateful_actor<JobState>;

void fail(JobActor* self, const std::string& what) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> lock(st.failure->mutex);
    if (st.failure->what.empty()) st.failure->what = what;
  }
  for (auto& [step, pending] : st.steps) pending.reply.deliver(caf::make_error(caf::sec::runtime_error, what));
  st.steps.clear();
}

caf::behavior job_behavior(JobActor* self, std::vector<caf::actor> pipelines, std::vector<std::uint32_t> shares,
                           std::vector<std::pair<caf::actor, std::string>> watched, std::shared_ptr<Failure> failure) {
  auto& st = self->state;
  st.pipelines = std::move(pipelines);
  st.shares = std::move(shares);
  st.failure = std::move(failure);
  for (auto& [actor, name] : watched) {
    st.names[actor.address()] = name;
    self->monitor(actor);
  }
  self->set_down_handler([=](caf::down_msg& down) {
    if (down.reason == caf::exit_reason::user_shutdown || down.reason == caf::exit_reason::normal) return;
    const auto it = self->state.names.find(down.source);
    fail(self, (it != self->state.names.end() ? it->second : std::string("an actor")) +
                   " ended: " + self->system().render(down.reason));
  });
  return {
      [=](step_atom, std::uint64_t step, train::Payload& inputs, train::Payload& labels) -> caf::result<double> {
        auto& st = self->state;
        {
          std::lock_guard<std::mutex> lock(st.failure->mutex);
          if (!st.failure->what.empty()) return caf::make_error(caf::sec::runtime_error, st.failure->what);
        }
        Pending& pending = st.steps[step];
        pending.reply = self->make_response_promise<double>();
        const auto input_parts = train::split_rows(inputs, st.shares);
        const auto label_parts = train::split_rows(labels, st.shares);
        for (std::size_t p = 0; p < st.pipelines.size(); ++p) {
          const double share = st.shares[p];
          self->request(st.pipelines[p], caf::infinite, step_atom::value, step, input_parts[p], label_parts[p])
              .then(
                  [=](double loss) {
                    auto& st = self->state;
                    const auto it = st.steps.find(step);
                    if (it == st.steps.end()) return; // failed already
                    it->second.loss_sum += loss * share;
                    if (++it->second.answered < st.pipelines.size()) return;
                    std::uint32_t total = 0;
                    for (auto n : st.shares) total += n;
                    it->second.reply.deliver(it->second.loss_sum / total);
                    st.steps.erase(it);
                  },
                  [=](caf::error& error) { fail(self, "pipeline " + std::to_string(p) + ": " + self->system().render(error)); });
        }
        return pending.reply;
      },
      [=](failed_atom, const std::string& what) { fail(self, what); },
  };
}

} // namespace

caf::actor spawn_job(caf::actor_system& system, std::vector<caf::actor> pipelines, std::vector<std::uint32_t> shares,
                     std::vector<std::pair<caf::actor, std::string>> watched, std::shared_ptr<Failure> failure) {
  return system.spawn(job_behavior, std::move(pipelines), std::move(shares), std::move(watched), std::move(failure));
}

} // namespace actorpipe::actors
