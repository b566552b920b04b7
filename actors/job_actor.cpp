/// Job actor: steps over all pipelines, and failure handling.

#include "job_actor.hpp"

#include "messages.hpp"

#include <map>

namespace actorpipe::actors {

namespace {

struct JobState {
  std::vector<caf::actor> pipelines;
  std::vector<std::uint32_t> shares;
  std::map<caf::actor_addr, std::string> names;
  std::shared_ptr<Failure> failure;
  caf::typed_response_promise<double> reply;
  bool pending = false;
  std::size_t answered = 0;
  double loss_sum = 0;
  static inline const char* name = "job";
};

using JobActor = caf::stateful_actor<JobState>;

void fail(JobActor* self, const std::string& what) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> lock(st.failure->mutex);
    if (st.failure->what.empty()) st.failure->what = what;
  }
  if (st.pending) {
    st.pending = false;
    st.reply.deliver(caf::make_error(caf::sec::runtime_error, what));
  }
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
      [=](step_atom, train::Payload& inputs, train::Payload& labels) -> caf::result<double> {
        auto& st = self->state;
        {
          std::lock_guard<std::mutex> lock(st.failure->mutex);
          if (!st.failure->what.empty()) return caf::make_error(caf::sec::runtime_error, st.failure->what);
        }
        st.reply = self->make_response_promise<double>();
        st.pending = true;
        st.answered = 0;
        st.loss_sum = 0;
        const auto input_parts = train::split_rows(inputs, st.shares);
        const auto label_parts = train::split_rows(labels, st.shares);
        for (std::size_t p = 0; p < st.pipelines.size(); ++p) {
          const double share = st.shares[p];
          self->request(st.pipelines[p], caf::infinite, step_atom::value, input_parts[p], label_parts[p])
              .then(
                  [=](double loss) {
                    auto& st = self->state;
                    if (!st.pending) return;
                    st.loss_sum += loss * share;
                    if (++st.answered < st.pipelines.size()) return;
                    std::uint32_t total = 0;
                    for (auto n : st.shares) total += n;
                    st.pending = false;
                    st.reply.deliver(st.loss_sum / total);
                  },
                  [=](caf::error& error) { fail(self, "pipeline " + std::to_string(p) + ": " + self->system().render(error)); });
        }
        return st.reply;
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
