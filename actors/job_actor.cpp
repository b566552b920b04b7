/// Job actor: builds the run's actors, steps over all pipelines, and failure handling.

#include "job_actor.hpp"

#include "averager_actor.hpp"
#include "error_text.hpp"
#include "group_scheduler_actor.hpp"
#include "processes/heartbeat_actor.hpp"
#include "parameter_server_actor.hpp"
#include "pipeline_actor.hpp"
#include "server_copy_actor.hpp"
#include "stage_actor.hpp"
#include "stall_watchdog_actor.hpp"
#include "replica_barrier.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <optional>

namespace actorpipe::actors {

namespace {

/// A step handed to the pipelines and not yet answered: the run queues the next step
/// while one runs.
struct Pending {
  caf::typed_response_promise<double> reply;
  std::size_t answered = 0; ///< pipelines done
  double loss_sum = 0;
};

/// Under an asynchronous policy a pipeline is handed a share only while it holds fewer
/// than this many: one it computes and one its first stage starts on as soon as that
/// one's step is done. Shares handed further ahead would be split evenly, and a faster
/// pipeline would wait at the end for the slower ones to work through theirs.
constexpr std::size_t shares_ahead = 2;

struct JobState {
  std::vector<pipeline_actor> pipelines;
  std::vector<Route> to_pipelines; ///< by pipeline: how its shares reach it (another process: as rows)
  std::vector<stage_actor> stages; ///< every pipeline's, scheduled averaging only (they settle)
  std::vector<std::uint32_t> shares;
  group_scheduler_actor scheduler;             ///< scheduled averaging only
  std::vector<parameter_server_actor> servers; ///< by stage index: a parameter server only
  bool asynchronous = false;                   ///< pipelines step on their own
  std::optional<ShareDealer> dealer;           ///< who takes each share (share_dealer())
  std::vector<caf::actor_addr> built;          ///< every actor this job spawned, shut down with it
  std::map<caf::actor_addr, std::string> names;
  /// Of the actors watched in other processes, the rank of each one's worker; and each
  /// worker named with the stages it runs, for when it is lost.
  std::map<caf::actor_addr, std::uint64_t> worker_of;
  std::map<std::uint64_t, std::string> workers;
  std::shared_ptr<Failure> failure;
  std::map<std::uint64_t, Pending> steps;
  /// Stage hosts of other processes yet to say their stages are wired; steps that
  /// came meanwhile wait in `held`.
  std::size_t unwired = 0;
  std::vector<std::function<void()>> held;
  static inline const char* name = "job";
};

using JobActor = job_actor::stateful_pointer<JobState>;

void fail(JobActor self, const std::string& what) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> lock(st.failure->mutex);
    if (st.failure->what.empty()) st.failure->what = what;
  }
  for (auto& [step, pending] : st.steps)
    pending.reply.deliver(caf::make_error(caf::sec::runtime_error, what));
  st.steps.clear();
  if (st.dealer) st.dealer->drop_queued();
}

} // namespace

ShareDealer share_dealer(const JobConfig& config, std::size_t pipelines) {
  if (!config.asynchronous()) return ShareDealer(pipelines, ShareDealer::Order::in_turn);
  const auto* scheduled = std::get_if<ScheduledAveraging>(&config.mode);
  const auto* server = std::get_if<ParameterServer>(&config.mode);
  const bool waits_for_all =
      (scheduled && scheduled->scheduling.force_every == 1) || (server && server->staleness == 0);
  return ShareDealer(pipelines, waits_for_all ? ShareDealer::Order::in_turn : ShareDealer::Order::least_busy,
                     shares_ahead);
}

std::vector<std::vector<std::optional<int>>> stage_cores(const JobConfig& config, const launch::Topology& topology,
                                                         std::uint64_t rank, const std::vector<int>& usable) {
  const std::size_t P = config.plan.pipelines, S = config.plan.stages.size();
  std::vector<std::vector<std::optional<int>>> cores(P, std::vector<std::optional<int>>(S));
  if (!config.pin_threads || !config.detached) return cores;
  std::size_t count = 0;
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s)
      count += topology.runs(rank, p, s) ? 1 : 0;
  std::size_t index = 0;
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s)
      if (topology.runs(rank, p, s)) cores[p][s] = train::stage_core(usable, index++, count);
  return cores;
}

launch::Topology JobConfig::topology() const {
  return processes ? launch::Topology(processes->ranks)
                   : launch::Topology::one_process(plan.pipelines, plan.stages.size());
}

PipelineConfig pipeline_config(const JobConfig& config, std::vector<stage_actor> stages, Route to_first,
                               Route to_last) {
  PipelineConfig pipeline;
  pipeline.stages = std::move(stages);
  pipeline.micro_batch_sizes = config.plan.schedule.micro_batch_sizes;
  // A pipeline stepping on its own steps on its share's mean gradient.
  pipeline.batch_size =
      static_cast<std::uint32_t>(config.asynchronous() ? config.plan.schedule.samples() : config.plan.batch_size);
  pipeline.first_step = config.first_step;
  pipeline.to_first = to_first;
  pipeline.to_last = to_last;
  pipeline.make_rows = config.make_rows;
  return pipeline;
}

StageConfig stage_config(const JobConfig& config, std::size_t p, std::size_t s, std::optional<int> core) {
  const Plan& plan = config.plan;
  const std::size_t P = plan.pipelines, S = plan.stages.size();
  StageConfig stage;
  stage.computation = &config.computation(p, s);
  stage.actions = plan.schedule.virtual_stage_actions()[s];
  stage.turns = config.device_turns->of(plan.schedule, p, plan.schedule.place_of(s).stage);
  stage.pipeline = p;
  stage.stage = s;
  stage.stages = S;
  stage.first_step = config.first_step;
  stage.clipping = config.clipping;
  if (config.traces) {
    stage.trace = &(*config.traces)[p * S + s];
    stage.trace->pipeline = p;
    stage.trace->stage = s;
  }
  if (config.activities) {
    stage.activity = &(*config.activities)[p * S + s];
    stage.activity->pipeline = p;
    stage.activity->stage = s;
  }
  stage.origin = config.origin;
  stage.inject_failure = config.inject_failure;
  stage.core = core;
  stage.detached = config.detached;
  if (p < config.emulated.size()) stage.emulated = config.emulated[p][s];
  if (config.step_ahead && P > 1)
    stage.step_ahead = [step_ahead = config.step_ahead, s, p](std::uint64_t step) { return step_ahead(s, p, step); };
  if (averaging(config.mode) && config.average) {
    stage.snapshot = [snapshot = config.snapshot, s, p] { snapshot(s, p); };
    stage.correct = [correct = config.correct, s, p] { correct(s, p); };
    if (const auto* scheduled = std::get_if<ScheduledAveraging>(&config.mode))
      stage.overlap = scheduled->scheduling.overlap;
    if (const auto* elastic = std::get_if<ElasticAveraging>(&config.mode)) stage.period = elastic->period;
  }
  stage.transport = config.transport;
  stage.make_rows = config.make_rows;
  return stage;
}

namespace {

/// Spawns the plan's actors, watched under the names that failure messages give them,
/// and connects each stage to its neighbours, pipeline, replicas (with their sync round)
/// and this job.
void build(JobActor self, const JobConfig& config) {
  auto& st = self->state;
  const Plan& plan = config.plan;
  const std::size_t P = plan.pipelines, S = plan.stages.size();
  // An actor in another process (`worker` > 0) is named with it.
  auto watch = [&](const auto& actor, std::string name, std::uint64_t worker = 0) {
    if (worker != 0) {
      name += " (worker process " + std::to_string(worker) + ")";
      st.worker_of[actor.address()] = worker;
    }
    st.names[actor.address()] = std::move(name);
    self->monitor(actor);
    st.built.push_back(actor.address());
  };
  std::vector<std::vector<stage_actor>> stages(P);
  // Stage s of pipeline p's process: 0 is this one.
  const launch::Topology topology = config.topology();
  const auto rank = [&](std::size_t p, std::size_t s) { return topology.rank(p, s); };
  const auto route = [&](std::size_t p, std::size_t s) {
    return rank(p, s) == 0 ? Route{}
                           : Route{config.transport, static_cast<std::size_t>(rank(p, s)),
                                   config.processes->same_data.count(rank(p, s)) > 0};
  };
  const auto cores = stage_cores(config, topology, 0, train::usable_cores());
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s) {
      const std::string name = "stage " + std::to_string(s) + " of pipeline " + std::to_string(p);
      if (rank(p, s) != 0) {
        stages[p].push_back(config.processes->stages[p][s]);
        watch(stages[p].back(), name, rank(p, s));
        continue;
      }
      stages[p].push_back(spawn_stage(self->system(), stage_config(config, p, s, cores[p][s])));
      watch(stages[p].back(), name);
    }
  const auto share = static_cast<std::uint32_t>(plan.schedule.samples());
  st.asynchronous = config.asynchronous();
  st.dealer.emplace(share_dealer(config, P));
  for (std::size_t p = 0; p < P; ++p) {
    st.shares.push_back(share);
    if (config.processes && p < config.processes->pipelines.size() && config.processes->pipelines[p]) {
      // Spawned by the worker that runs all its stages, which makes its shares' rows.
      st.pipelines.push_back(config.processes->pipelines[p]);
      st.to_pipelines.push_back(route(p, 0));
      watch(st.pipelines.back(), "pipeline " + std::to_string(p), rank(p, 0));
      continue;
    }
    st.pipelines.push_back(
        spawn_pipeline(self->system(), pipeline_config(config, stages[p], route(p, 0), route(p, S - 1))));
    st.to_pipelines.emplace_back();
    watch(st.pipelines.back(), "pipeline " + std::to_string(p));
  }
  const job_actor job = caf::actor_cast<job_actor>(self);
  // By stage index: this process's averager (of its replicas of the stage, if any);
  // and [stage][pipeline], the averager of that replica's process.
  std::vector<averager_actor> averagers(S);
  std::vector<std::vector<averager_actor>> averager_of(S, std::vector<averager_actor>(P));
  // This process's stage actors of stage s, by pipeline (empty for others'), if any.
  const auto here = [&](std::size_t s) {
    std::optional<std::vector<stage_actor>> mine;
    for (const std::size_t p : topology.replicas_in(0, s)) {
      if (!mine) mine.emplace(P);
      (*mine)[p] = stages[p][s];
    }
    return mine;
  };
  const bool elastic = std::holds_alternative<ElasticAveraging>(config.mode);
  if (averaging(config.mode) && P > 1) {
    for (std::size_t s = 0; s < S; ++s) {
      if (auto replicas = here(s)) {
        averagers[s] =
            spawn_averager(self->system(),
                           {s, std::move(*replicas),
                            [average = config.average, s](const std::vector<std::size_t>& group) { average(s, group); },
                            job, config.detached});
        watch(averagers[s], "the averager of stage " + std::to_string(s));
      }
      for (std::size_t p = 0; p < P; ++p)
        averager_of[s][p] = rank(p, s) == 0 ? averagers[s] : config.processes->averagers.at(rank(p, s)).at(s);
    }
    if (config.processes)
      for (const auto& [host, by_stage] : config.processes->averagers)
        for (std::size_t s = 0; s < by_stage.size(); ++s)
          if (by_stage[s]) watch(by_stage[s], "the averager of stage " + std::to_string(s), host);
    // Asynchronous elastic averaging over several processes: a stage asks its stage's
    // relay, which tells every process's averager of the stage.
    if (elastic && config.processes)
      for (std::size_t s = 0; s < S; ++s) {
        std::vector<averager_actor> every;
        for (std::size_t p = 0; p < P; ++p)
          if (std::find(every.begin(), every.end(), averager_of[s][p]) == every.end())
            every.push_back(averager_of[s][p]);
        averagers[s] = spawn_averager_relay(self->system(), std::move(every));
        watch(averagers[s], "the averager relay of stage " + std::to_string(s));
      }
    for (const auto& pipeline : stages)
      st.stages.insert(st.stages.end(), pipeline.begin(), pipeline.end());
  }
  if (const auto* scheduled = std::get_if<ScheduledAveraging>(&config.mode); scheduled && P > 1) {
    st.scheduler =
        spawn_group_scheduler(self->system(), {scheduled->scheduling, stages, averager_of, config.time_scale, job});
    watch(st.scheduler, "the group scheduler");
  }
  if (const auto* server = std::get_if<ParameterServer>(&config.mode))
    for (std::size_t s = 0; s < S; ++s) {
      std::vector<stage_actor> replicas;
      for (std::size_t p = 0; p < P; ++p)
        replicas.push_back(stages[p][s]);
      const auto serve = [serve = config.serve, s](const std::vector<std::size_t>& pushers) { serve(s, pushers); };
      // Over several processes each keeps a copy of the server, which the server here
      // tells what to do; this one's too, where it holds replicas of the stage.
      std::vector<server_copy_actor> copies;
      if (config.processes) {
        if (auto mine = here(s)) {
          copies.push_back(spawn_server_copy(self->system(), {s, std::move(*mine), serve, config.detached}));
          watch(copies.back(), "the parameter server copy of stage " + std::to_string(s));
        }
        for (const auto& [host, by_stage] : config.processes->servers)
          if (s < by_stage.size() && by_stage[s]) {
            copies.push_back(by_stage[s]);
            watch(by_stage[s], "the parameter server copy of stage " + std::to_string(s), host);
          }
      }
      st.servers.push_back(spawn_parameter_server(
          self->system(), {s, server->staleness, std::move(replicas), serve, job, config.detached, std::move(copies)}));
      watch(st.servers.back(), "the parameter server of stage " + std::to_string(s));
    }
  // Stages in other processes are wired by their hosts, which make their sync rounds
  // there.
  std::map<std::uint64_t, std::vector<StageWiring>> wirings;
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s)
      if (rank(p, s) != 0)
        wirings[rank(p, s)].push_back({p, s, s > 0 ? stages[p][s - 1] : stage_actor{},
                                       s + 1 < S ? stages[p][s + 1] : stage_actor{},
                                       topology.previous_rank(p, s).value_or(0), topology.next_rank(p, s).value_or(0),
                                       st.pipelines[p], job, st.scheduler, elastic ? averagers[s] : averager_actor{},
                                       st.servers.empty() ? parameter_server_actor{} : st.servers[s]});
  st.unwired = wirings.size();
  if (config.processes) {
    HeartbeatConfig heartbeat{config.processes->hosts, {},  config.processes->heartbeat_timeout,
                              config.stall_timeout,    job, st.failure};
    for (const auto& [host, wiring] : wirings) {
      std::string stages;
      for (const StageWiring& w : wiring)
        stages += (stages.empty() ? "" : ", ") + std::string("stage ") + std::to_string(w.stage) + " of pipeline " +
                  std::to_string(w.pipeline);
      st.workers[host] = "worker process " + std::to_string(host) + " (" + stages + ")";
    }
    heartbeat.names = st.workers;
    st.built.push_back(spawn_heartbeat(self->system(), std::move(heartbeat)).address());
  }
  if (config.activities && config.stall_timeout.count() > 0) {
    StallWatchdogConfig watchdog{{}, config.stall_timeout, job, st.failure};
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t s = 0; s < S; ++s)
        if (rank(p, s) == 0) watchdog.stages.push_back(&(*config.activities)[p * S + s]);
    if (!watchdog.stages.empty())
      st.built.push_back(spawn_stall_watchdog(self->system(), std::move(watchdog)).address());
  }
  for (auto& [host, wiring] : wirings)
    self->request(config.processes->hosts.at(host), caf::infinite, wire_atom::value, std::move(wiring))
        .then(
            [=](bool) {
              if (--self->state.unwired > 0) return;
              for (auto& start : self->state.held)
                start();
              self->state.held.clear();
            },
            [=](caf::error& error) {
              fail(self, "worker " + std::to_string(host) +
                             " could not wire its stages: " + error_text(self->system(), error));
            });
  for (std::size_t s = 0; s < S; ++s) {
    std::shared_ptr<ReplicaBarrier> round;
    std::vector<stage_actor> replicas;
    if (P > 1) {
      for (std::size_t p = 0; p < P; ++p)
        replicas.push_back(stages[p][s]);
    }
    if (P > 1 && !st.asynchronous) {
      round =
          std::make_shared<ReplicaBarrier>(s, P, [sync = config.sync, s](std::uint64_t step) { return sync(s, step); });
    }
    const StepEnd end = step_end(config.mode, round, replicas, st.scheduler, averagers[s],
                                 st.servers.empty() ? parameter_server_actor{} : st.servers[s]);
    for (std::size_t p = 0; p < P; ++p)
      if (rank(p, s) == 0)
        self->send(stages[p][s], connect_atom::value,
                   StageLinks{s > 0 ? stages[p][s - 1] : stage_actor{}, s + 1 < S ? stages[p][s + 1] : stage_actor{},
                              st.pipelines[p], job, end, s > 0 ? route(p, s - 1) : Route{},
                              s + 1 < S ? route(p, s + 1) : Route{}});
  }
}

/// Tells whoever coordinates an asynchronous policy that pipeline `p` has no work
/// (`idle`) or has work again.
void tell_idle(JobActor self, std::size_t p, bool idle) {
  auto& st = self->state;
  if (st.scheduler) self->send(st.scheduler, idle_atom::value, std::uint64_t{p}, idle);
  for (const parameter_server_actor& server : st.servers)
    self->send(server, idle_atom::value, std::uint64_t{p}, idle);
}

void deal(JobActor self);

/// Hands pipeline p its share of a step. The group scheduler or parameter servers hear
/// of a pipeline given work after it had none, and of one left with none.
void hand(JobActor self, ShareDealer::Dealt dealt) {
  auto& st = self->state;
  const std::size_t p = dealt.pipeline;
  if (dealt.had_none) tell_idle(self, p, false);
  const double weight = st.shares[dealt.share.part];
  const std::uint64_t step = dealt.share.step;
  // A pipeline here takes the share as it is: only rows where its stages make them.
  const auto parcel = [route = st.to_pipelines[p]](train::Payload payload) {
    if (route.transport) return pack(std::move(payload), route);
    Parcel here;
    here.payload = std::move(payload);
    return here;
  };
  Parcel inputs, labels;
  try {
    inputs = parcel(std::move(dealt.share.inputs));
    labels = parcel(std::move(dealt.share.labels));
  } catch (const std::exception& e) {
    fail(self, "pipeline " + std::to_string(p) + ": " + text::message_of(e));
    return;
  }
  self->request(st.pipelines[p], caf::infinite, step_atom::value, step, std::move(inputs), std::move(labels))
      .then(
          [=](double loss) {
            auto& st = self->state;
            st.dealer->done(p);
            deal(self); // before telling anyone it is idle: it may have work at once
            if (st.dealer->in_hand(p) == 0) tell_idle(self, p, true);
            const auto it = st.steps.find(step);
            if (it == st.steps.end()) return; // failed already
            it->second.loss_sum += loss * weight;
            if (++it->second.answered < st.pipelines.size()) return;
            std::uint32_t total = 0;
            for (auto n : st.shares)
              total += n;
            it->second.reply.deliver(it->second.loss_sum / total);
            st.steps.erase(it);
          },
          [=](caf::error& error) {
            fail(self, "pipeline " + std::to_string(p) + ": " + error_text(self->system(), error));
          });
}

/// Hands out the shares the dealer lets go now.
void deal(JobActor self) {
  for (ShareDealer::Dealt& dealt : self->state.dealer->deal())
    hand(self, std::move(dealt));
}

job_actor::behavior_type job_behavior(JobActor self, JobConfig config) {
  auto& st = self->state;
  st.failure = config.failure;
  build(self, config);
  self->set_down_handler([=](caf::down_msg& down) {
    if (down.reason == caf::exit_reason::user_shutdown || down.reason == caf::exit_reason::normal) return;
    if (down.reason == caf::exit_reason::remote_link_unreachable) {
      {
        std::lock_guard<std::mutex> lock(self->state.failure->mutex);
        self->state.failure->worker_lost = true;
      }
      // Every actor of that worker goes down with it: it is the worker that is named.
      const auto& st = self->state;
      if (const auto w = st.worker_of.find(down.source); w != st.worker_of.end() && st.workers.count(w->second)) {
        fail(self, st.workers.at(w->second) + " " + ended_text(self->system(), down.reason));
        return;
      }
    }
    const auto it = self->state.names.find(down.source);
    fail(self, (it != self->state.names.end() ? it->second : std::string("an actor")) + " " +
                   ended_text(self->system(), down.reason));
  });
  self->set_exit_handler([=](caf::exit_msg& exit) {
    // Whoever waits for a step gets an answer, not silence.
    for (auto& [step, pending] : self->state.steps)
      pending.reply.deliver(caf::make_error(caf::sec::runtime_error, "the job was shut down"));
    self->state.steps.clear();
    for (const caf::actor_addr& actor : self->state.built)
      self->send_exit(actor, exit.reason);
    self->quit(exit.reason);
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
        auto start = [=] {
          auto& st = self->state;
          auto input_parts = train::split_rows(inputs, st.shares);
          auto label_parts = train::split_rows(labels, st.shares);
          for (std::size_t part = 0; part < st.pipelines.size(); ++part)
            st.dealer->add(Share{step, part, std::move(input_parts[part]), std::move(label_parts[part])});
          deal(self);
        };
        if (st.unwired > 0)
          st.held.push_back(std::move(start));
        else
          start();
        return pending.reply;
      },
      [=](settle_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (st.stages.empty()) return true;
        auto settled = self->make_response_promise<bool>();
        auto left = std::make_shared<std::size_t>(st.stages.size());
        for (const stage_actor& stage : st.stages)
          self->request(stage, caf::infinite, settle_atom::value)
              .then(
                  [=](bool) mutable {
                    if (--*left == 0) settled.deliver(true);
                  },
                  [=](caf::error& error) mutable { settled.deliver(std::move(error)); });
        return settled;
      },
      [=](failed_atom, const std::string& what) { fail(self, what); },
  };
}

} // namespace

job_actor spawn_job(caf::actor_system& system, JobConfig config) {
  return system.spawn(job_behavior, std::move(config));
}

} // namespace actorpipe::actors
