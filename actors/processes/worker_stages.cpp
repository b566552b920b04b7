/// The coordinator's side of its workers' stages: start, spawn, state in and out, spans.

#include "processes/worker_stages.hpp"

#include "error_text.hpp"

#include <actorpipe/profile_io.hpp>

#include "base/sha256.hpp"
#include "base/text.hpp"
#include "planner/plan_wire.hpp"
#include "train/payload.hpp"
#include "train/session.hpp"
#include "train/stage_worker.hpp"

#include <caf/all.hpp>

namespace actorpipe::actors {

Result<std::unique_ptr<Coordination>>
start_workers(caf::actor_system& system, const CoordinateOptions& coordinate, const JobSpec& job, const Plan& plan,
              const std::vector<std::vector<std::uint64_t>>& placement, std::uint64_t first_step,
              std::uint64_t total_steps, Clock::time_point origin, const std::optional<InjectedFailure>& inject,
              std::vector<std::string> hosts, std::uint64_t data_fingerprint, bool pin_threads) {
  JobOrder order;
  if (inject) {
    order.inject_stage = inject->stage;
    order.inject_step = inject->step;
    order.inject_effect = static_cast<std::uint8_t>(inject->effect);
  }
  order.job_file = coordinate.job_file;
  order.overrides = coordinate.overrides;
  order.profile_toml = to_toml(job.profile);
  order.plan = planner::plan_to_wire(plan);
  order.plan_sha256 = sha256_hex(order.plan);
  order.first_step = first_step;
  order.total_steps = total_steps;
  order.origin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(origin.time_since_epoch()).count();
  order.placement = placement;
  order.data_fingerprint = data_fingerprint;
  order.pin_threads = pin_threads;
  return actors::coordinate(system, coordinate, std::move(order), std::move(hosts));
}

Result<RemoteStages> spawn_remote_stages(caf::actor_system& system, Coordination& coordination,
                                         const std::vector<std::vector<std::uint64_t>>& placement, const Plan& plan) {
  RemoteStages remote;
  remote.stages.assign(plan.pipelines, std::vector<stage_actor>(plan.stages.size()));
  caf::scoped_actor self{system};
  for (const auto& [rank, host] : coordination.hosts) {
    std::optional<Error> error;
    self->request(host, std::chrono::seconds(60), spawn_atom::value)
        .receive(
            [&, rank = rank](HostedStages& spawned) {
              std::size_t next = 0;
              for (std::size_t p = 0; p < plan.pipelines; ++p)
                for (std::size_t s = 0; s < plan.stages.size(); ++s)
                  if (placement[p][s] == rank && next < spawned.stages.size())
                    remote.stages[p][s] = spawned.stages[next++];
              remote.averagers[rank] = std::move(spawned.averagers);
              remote.servers[rank] = std::move(spawned.servers);
              if (spawned.same_data) remote.same_data.insert(rank);
              remote.pipelines.resize(plan.pipelines);
              for (std::size_t p = 0; p < spawned.pipelines.size() && p < plan.pipelines; ++p)
                if (spawned.pipelines[p]) remote.pipelines[p] = std::move(spawned.pipelines[p]);
            },
            [&](caf::error& e) {
              error = Error::run_failed("worker " + std::to_string(rank) +
                                        " could not spawn its stages: " + error_text(system, e));
            });
    if (error) return *error;
  }
  return remote;
}

Status pull_state(caf::scoped_actor& self, Coordination& coordination,
                  const std::vector<std::vector<std::uint64_t>>& placement, train::Session& session) {
  // Asked all at once: a host that sums across the others answers once they all have.
  using Answer =
      decltype(self->request(std::declval<stage_host_actor>(), caf::infinite, collect_atom::value, std::uint64_t{0}));
  std::vector<std::pair<std::uint64_t, Answer>> asked;
  for (const auto& [rank, host] : coordination.hosts)
    asked.emplace_back(rank, self->request(host, std::chrono::seconds(60), collect_atom::value, std::uint64_t{0}));
  Status pulled = Ok{};
  for (auto& [rank, answer] : asked) {
    answer.receive(
        [&](std::vector<transport::TensorTicket>& tickets) {
          std::size_t next = 0;
          try {
            for (std::size_t s = 0; s < placement[0].size(); ++s)
              if (placement[0][s] == rank && next < tickets.size())
                session.worker(0, s).load_state_bytes(
                    train::payload_text(coordination.transport->receive(tickets[next++])));
          } catch (const std::exception& e) {
            pulled =
                Error::run_failed("the state of worker " + std::to_string(rank) + "'s stages: " + text::message_of(e));
          }
        },
        [&](caf::error& e) {
          pulled = Error::run_failed("worker " + std::to_string(rank) +
                                     " did not hand over its stages' state: " + error_text(self->system(), e));
        });
    ACTORPIPE_TRY(pulled);
  }
  return Ok{};
}

Status push_state(caf::scoped_actor& self, Coordination& coordination,
                  const std::vector<std::vector<std::uint64_t>>& placement, train::Session& session) {
  for (const auto& [rank, host] : coordination.hosts) {
    std::vector<transport::TensorTicket> tickets;
    for (std::size_t p = 0; p < placement.size(); ++p) // the host's spawn order
      for (std::size_t s = 0; s < placement[p].size(); ++s)
        if (placement[p][s] == rank)
          tickets.push_back(coordination.transport->send(train::bytes_payload(session.worker(p, s).state_bytes()),
                                                         static_cast<std::size_t>(rank)));
    Status pushed = Ok{};
    self->request(host, std::chrono::seconds(60), restore_atom::value, std::move(tickets))
        .receive([](bool) {},
                 [&](caf::error& e) {
                   pushed =
                       Error::run_failed("worker " + std::to_string(rank) +
                                         " could not take the checkpoint's state: " + error_text(self->system(), e));
                 });
    ACTORPIPE_TRY(pushed);
  }
  return Ok{};
}

void collect_traces(caf::scoped_actor& self, Coordination& coordination, const Plan& plan,
                    std::vector<StageTrace>& traces) {
  for (const auto& [rank, host] : coordination.hosts)
    self->request(host, std::chrono::seconds(30), trace_atom::value)
        .receive(
            [&](std::vector<StageTrace>& kept) {
              for (StageTrace& t : kept)
                if (t.pipeline < plan.pipelines && t.stage < plan.stages.size())
                  traces[t.pipeline * plan.stages.size() + t.stage] = std::move(t);
            },
            [](caf::error&) {});
}

} // namespace actorpipe::actors
