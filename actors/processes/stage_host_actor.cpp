/// Stage host: a worker process's stages, spawned and wired on the coordinator's word.

#include "processes/stage_host_actor.hpp"

#include "averager_actor.hpp"
#include "job_actor.hpp"
#include "pipeline_actor.hpp"
#include "server_copy_actor.hpp"
#include "stage_actor.hpp"
#include "replica_barrier.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"
#include "train/stage_worker.hpp"

#include <caf/all.hpp>

#include <map>
#include <optional>

namespace actorpipe::actors {

namespace {

struct StageHostState {
  StageHostConfig config;
  std::map<std::pair<std::size_t, std::size_t>, stage_actor> stages; ///< by (pipeline, stage)
  std::vector<averager_actor> averagers;  ///< scheduled or elastic averaging: by stage index, where it holds replicas
  std::vector<server_copy_actor> servers; ///< a parameter server: its copies, likewise
  std::vector<pipeline_actor> pipelines;  ///< by pipeline: those whose stages all run here (HostedStages)
  static inline const char* name = "stage host";
};

using StageHost = stage_host_actor::stateful_pointer<StageHostState>;

bool mine(const StageHostConfig& config, std::size_t p, std::size_t s) {
  return config.topology.runs(config.rank, p, s);
}

/// "rank 1 runs pipeline 0 with its pipeline actor", "rank 1 runs pipelines 0, 1 with
/// their pipeline actors", or "rank 3 runs stage 1 of pipeline 0; stage 1 of pipeline
/// 1": what a worker's log says once it has spawned.
std::string what_it_runs(const StageHostConfig& config, const std::vector<pipeline_actor>& pipelines) {
  std::vector<std::size_t> whole;
  std::string parts;
  for (std::size_t p = 0; p < config.topology.pipelines(); ++p) {
    if (p < pipelines.size() && pipelines[p]) {
      whole.push_back(p);
      continue;
    }
    std::vector<std::size_t> here;
    for (std::size_t s = 0; s < config.topology.stages(); ++s)
      if (mine(config, p, s)) here.push_back(s);
    if (here.empty()) continue;
    std::string part = here.size() == 1 ? "stage " : "stages ";
    for (std::size_t i = 0; i < here.size(); ++i)
      part += (i == 0 ? "" : ", ") + std::to_string(here[i]);
    parts += (parts.empty() ? "" : "; ") + part + " of pipeline " + std::to_string(p);
  }
  std::string runs;
  for (std::size_t i = 0; i < whole.size(); ++i)
    runs += (i == 0 ? (whole.size() == 1 ? "pipeline " : "pipelines ") : ", ") + std::to_string(whole[i]);
  if (!whole.empty()) runs += whole.size() == 1 ? " with its pipeline actor" : " with their pipeline actors";
  if (!parts.empty()) runs += (runs.empty() ? "" : "; ") + parts;
  return "rank " + std::to_string(config.rank) + " runs " + (runs.empty() ? "no stage" : runs);
}

/// The stages of this process, wired: routes to neighbours elsewhere go through the
/// transport; the replicas of a stage index here share a sync round, whose sync (the
/// run's executor) all-reduces across the processes.
void wire(StageHost self, const std::vector<StageWiring>& wirings) {
  auto& st = self->state;
  const JobConfig& job = st.config.setup->job;
  const std::size_t P = job.plan.pipelines;
  const auto route = [&](std::uint64_t rank) {
    return rank == st.config.rank ? Route{} : Route{st.config.transport, static_cast<std::size_t>(rank)};
  };
  std::map<std::size_t, std::shared_ptr<ReplicaBarrier>> rounds;
  std::map<std::size_t, std::vector<stage_actor>> replicas;
  if (P > 1 && !st.config.setup->asynchronous())
    for (const auto& [key, actor] : st.stages) {
      const auto [p, s] = key;
      replicas[s].push_back(actor);
      if (!rounds.count(s))
        rounds[s] =
            std::make_shared<ReplicaBarrier>(s, st.config.topology.replicas_in(st.config.rank, s),
                                             [sync = job.sync, s = s](std::uint64_t step) { return sync(s, step); });
    }
  for (const StageWiring& w : wirings) {
    const auto it = st.stages.find({w.pipeline, w.stage});
    if (it == st.stages.end()) continue;
    StageLinks links;
    links.previous = w.previous;
    links.next = w.next;
    links.pipeline = w.pipeline < st.pipelines.size() && st.pipelines[w.pipeline] ? st.pipelines[w.pipeline] : w.owner;
    links.job = w.job;
    links.step_end = step_end(job.mode, rounds.count(w.stage) ? rounds[w.stage] : nullptr, replicas[w.stage],
                              w.scheduler, w.averager, w.server);
    links.to_previous = route(w.previous_rank);
    links.to_next = route(w.next_rank);
    // Its links to stages on GPUs of other processes: NCCL where the transport opened them.
    const std::size_t S = job.plan.stages.size();
    if (w.stage > 0) links.to_previous.link = transport::TensorTransport::link_id(w.pipeline, S, w.stage, w.stage - 1);
    if (w.stage + 1 < S) links.to_next.link = transport::TensorTransport::link_id(w.pipeline, S, w.stage, w.stage + 1);
    self->send(it->second, connect_atom::value, std::move(links));
  }
}

stage_host_actor::behavior_type stage_host_behavior(StageHost self, StageHostConfig config) {
  self->state.config = std::move(config);
  self->set_exit_handler([=](caf::exit_msg& exit) {
    for (const auto& [key, stage] : self->state.stages)
      self->send_exit(stage, exit.reason);
    for (const averager_actor& averager : self->state.averagers)
      if (averager) self->send_exit(averager, exit.reason);
    for (const server_copy_actor& server : self->state.servers)
      if (server) self->send_exit(server, exit.reason);
    for (const pipeline_actor& pipeline : self->state.pipelines)
      if (pipeline) self->send_exit(pipeline, exit.reason);
    self->quit(exit.reason);
  });
  return {
      [=](spawn_atom) {
        auto& st = self->state;
        const JobConfig& job = st.config.setup->job;
        const auto cores = stage_cores(job, st.config.topology, st.config.rank, train::usable_cores());
        const std::size_t P = job.plan.pipelines, S = job.plan.stages.size();
        HostedStages spawned;
        for (std::size_t p = 0; p < P; ++p)
          for (std::size_t s = 0; s < S; ++s)
            if (mine(st.config, p, s)) {
              st.stages[{p, s}] = spawn_stage(self->system(), stage_config(job, p, s, cores[p][s]));
              spawned.stages.push_back(st.stages[{p, s}]);
            }
        // This process's stage actors of stage s, by pipeline (empty elsewhere), if any.
        const auto members = [&](std::size_t s) {
          std::optional<std::vector<stage_actor>> here;
          for (const std::size_t p : st.config.topology.replicas_in(st.config.rank, s)) {
            if (!here) here.emplace(P);
            (*here)[p] = st.stages[{p, s}];
          }
          return here;
        };
        // Scheduled or asynchronous elastic averaging: an averager of each stage index
        // here, for the groups with members here (the elastic moves of every member,
        // for the copy of the centre here). A parameter server: a copy of each stage's.
        // A failure ends either, which the job watching it hears.
        if (averaging(job.mode) && P > 1) {
          st.averagers.resize(S);
          for (std::size_t s = 0; s < S; ++s)
            if (auto here = members(s))
              st.averagers[s] = spawn_averager(
                  self->system(),
                  {s,
                   std::move(*here),
                   [average = job.average, s](const std::vector<std::size_t>& group) { average(s, group); },
                   {},
                   true});
          spawned.averagers = st.averagers;
        }
        if (std::holds_alternative<ParameterServer>(job.mode) && P > 1) {
          st.servers.resize(S);
          for (std::size_t s = 0; s < S; ++s)
            if (auto here = members(s))
              st.servers[s] = spawn_server_copy(
                  self->system(),
                  {s, std::move(*here),
                   [serve = job.serve, s](const std::vector<std::size_t>& pushers) { serve(s, pushers); }, true});
          spawned.servers = st.servers;
        }
        spawned.same_data = static_cast<bool>(job.make_rows);
        // A pipeline whose stages all run here runs here too, where it makes its rows:
        // its stages' reports and its micro-batches then stay in this process.
        st.pipelines.resize(P);
        for (std::size_t p = 0; p < P && spawned.same_data; ++p) {
          if (!st.config.topology.whole_in(st.config.rank, p)) continue;
          std::vector<stage_actor> stages;
          for (std::size_t s = 0; s < S; ++s)
            stages.push_back(st.stages[{p, s}]);
          st.pipelines[p] = spawn_pipeline(self->system(), pipeline_config(job, std::move(stages)));
        }
        spawned.pipelines = st.pipelines;
        if (st.config.say) st.config.say(what_it_runs(st.config, st.pipelines));
        return spawned;
      },
      [=](wire_atom, const std::vector<StageWiring>& wirings) {
        wire(self, wirings);
        return true; // each stage has its links in its mailbox, before anything sent after this
      },
      [=](restore_atom, const std::vector<transport::TensorTicket>& tickets) -> caf::result<bool> {
        auto& st = self->state;
        std::size_t next = 0;
        try {
          for (const auto& [key, stage] : st.stages) // (pipeline, stage) order, as spawned
            if (next < tickets.size())
              st.config.session->worker(key.first, key.second)
                  .load_state_bytes(train::payload_text(st.config.transport->receive(tickets[next++])));
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error,
                                 std::string("restoring its stages' state: ") + text::message_of(e));
        }
        if (st.config.setup->sync) st.config.setup->sync->restored();
        return true;
      },
      [=](collect_atom, std::uint64_t pipeline) {
        auto& st = self->state;
        std::vector<transport::TensorTicket> tickets;
        const auto collect = [&] {
          for (std::size_t s = 0; s < st.config.setup->job.plan.stages.size(); ++s)
            if (mine(st.config, pipeline, s))
              tickets.push_back(st.config.transport->send(
                  train::bytes_payload(st.config.session->worker(pipeline, s).state_bytes()), 0));
        };
        // What the policy trains (elastic's centre, in pipeline 0's replicas for the while),
        // as evaluation and checkpoints in one process read it.
        if (st.config.setup->sync)
          st.config.setup->sync->with_model(collect);
        else
          collect();
        return tickets;
      },
      [=](finish_atom, bool failed) {
        if (failed) self->state.config.transport->abandon();
        for (const auto& [key, stage] : self->state.stages)
          self->send_exit(stage, caf::exit_reason::user_shutdown);
        for (const averager_actor& averager : self->state.averagers)
          if (averager) self->send_exit(averager, caf::exit_reason::user_shutdown);
        for (const server_copy_actor& server : self->state.servers)
          if (server) self->send_exit(server, caf::exit_reason::user_shutdown);
        for (const pipeline_actor& pipeline : self->state.pipelines)
          if (pipeline) self->send_exit(pipeline, caf::exit_reason::user_shutdown);
        self->quit();
        return true;
      },
      [=](heartbeat_atom, std::uint64_t stall_ms) -> std::string {
        // Answered on the host's own thread: a stage whose thread is stuck is seen
        // from here, not by its silence.
        auto& st = self->state;
        if (stall_ms == 0 || !st.config.activities) return {};
        const std::size_t S = st.config.setup->job.plan.stages.size();
        std::vector<const StageActivity*> watched;
        for (const auto& [key, stage] : st.stages)
          watched.push_back(&(*st.config.activities)[key.first * S + key.second]);
        return first_stuck(watched, Clock::now(), std::chrono::milliseconds(stall_ms)).value_or("");
      },
      [=](trace_atom) {
        auto& st = self->state;
        std::vector<StageTrace> kept;
        const std::size_t S = st.config.setup->job.plan.stages.size();
        for (const auto& [key, stage] : st.stages)
          kept.push_back((*st.config.traces)[key.first * S + key.second]);
        return kept;
      },
  };
}

} // namespace

stage_host_actor spawn_stage_host(caf::actor_system& system, StageHostConfig config) {
  return system.spawn(stage_host_behavior, std::move(config));
}

} // namespace actorpipe::actors
