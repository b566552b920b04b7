/// run_worker(): a worker process's life, from joining to the end of the run.

#include "processes/worker_process.hpp"

#include "processes/control_channel.hpp"
#include "error_text.hpp"
#include "processes/gpu_links.hpp"
#include "processes/process_protocol.hpp"
#include "run/run_setup.hpp"
#include "processes/stage_host_actor.hpp"

#include <actorpipe/profile_io.hpp>
#include <actorpipe/tuning.hpp>

#include "base/sha256.hpp"
#include "launch/core_list.hpp"
#include "launch/job_token.hpp"
#include "launch/topology.hpp"
#include "planner/plan_wire.hpp"
#include "train/cores.hpp"
#include "transport/tensor_transport.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <future>
#include <thread>

#include <unistd.h>

namespace actorpipe::actors {

namespace {

/// The job as the coordinator loaded it, and the plan it made, as it came: checked
/// whole (its SHA-256) and against this server's job, which it must fit.
Result<std::pair<JobSpec, Plan>> take_plan(const JobOrder& order) {
  if (sha256_hex(order.plan) != order.plan_sha256)
    return Error::run_failed("the coordinator's plan came damaged (its SHA-256 does not match)");
  auto plan = planner::plan_from_wire(order.plan);
  ACTORPIPE_TRY(plan);
  auto job = load_job(order.job_file, order.overrides);
  ACTORPIPE_TRY(job);
  auto profile = parse_toml_profile(order.profile_toml, "the coordinator's profile");
  ACTORPIPE_TRY(profile);
  job->profile = std::move(*profile);
  TunedSetting shape;
  shape.stages = plan->stages.size();
  shape.pipelines = plan->pipelines;
  shape.micro_batches = static_cast<std::uint32_t>(plan->schedule.micro_batch_sizes.size());
  JobSpec shaped = job_with_shape(*job, shape);
  const std::string otherwise =
      order.job_file + ": this server's job is not the one the coordinator planned (another job file or cluster "
                       "file here?): ";
  if (plan->cluster != shaped.cluster.name)
    return Error::bad_input(otherwise + "the plan is for cluster '" + plan->cluster + "', the job here names '" +
                            shaped.cluster.name + "'");
  if (auto fits = plan->validate(shaped.profile, shaped.cluster); !fits)
    return Error::bad_input(otherwise + fits.error().message);
  return std::make_pair(std::move(shaped), std::move(*plan));
}

} // namespace

Status run_worker(const WorkerProcessOptions& options) {
  const auto say = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  // Before the actor system starts its threads: they take the binding with them.
  const bool bound = !options.cores.empty();
  if (bound) {
    const std::vector<int> usable = train::usable_cores();
    for (const int core : options.cores)
      if (!std::binary_search(usable.begin(), usable.end(), core))
        return Error::bad_input("--cpus " + launch::core_list_text(options.cores) + ": core " + std::to_string(core) +
                                " is not one this process may run on (" + launch::core_list_text(usable) + ")");
    if (!train::bind_process_to(options.cores))
      return Error::run_failed("cannot bind this process to cores " + launch::core_list_text(options.cores));
    say("bound to cores " + launch::core_list_text(options.cores));
  }
  caf::actor_system_config config;
  // A coordinator that accepts and never answers is given up on within the time to
  // reach it.
  configure_run_system(config, &options.tls,
                       std::min<std::chrono::milliseconds>(options.connect_timeout, std::chrono::seconds(10)));
  caf::actor_system system{config};
  const std::string where = "the coordinator at " + options.coordinator.text();
  const auto give_up = std::chrono::steady_clock::now() + options.connect_timeout;
  auto gate = reach_gate(system, options.coordinator, options.tls);
  while (!gate && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // it is not listening yet
    gate = reach_gate(system, options.coordinator, options.tls);
  }
  if (!gate) {
    const std::string why =
        gate.error() == caf::sec::cannot_connect_to_node ? "nothing there accepted the connection"
        : gate.error() == caf::sec::connection_timeout
            ? "it accepted the connection and never answered (not an actorpipe coordinator, or one that hangs)"
            : error_text(system, gate.error());
    return Error::run_failed(where + ": cannot reach it (tried for " + std::to_string(options.connect_timeout.count()) +
                             " s): " + why);
  }
  caf::scoped_actor self{system};
  std::optional<JobOrder> order;
  Status joined = Ok{};
  self->request(*gate, std::chrono::seconds(60), join_atom::value, options.token, options.host_name,
                static_cast<std::uint32_t>(::getpid()))
      .receive(
          [&](JobOrder& o) { order = std::move(o); },
          [&](caf::error& e) { joined = Error::bad_input(where + " refused this worker: " + error_text(system, e)); });
  ACTORPIPE_TRY(joined);
  say("joined " + where + " as rank " + std::to_string(order->rank) + " of " + std::to_string(order->world));

  auto planned = take_plan(*order);
  ACTORPIPE_TRY(planned);
  const JobSpec& job = planned->first;
  const Plan& plan = planned->second;
  const launch::Topology topology(order->placement);
  const std::size_t stages_here = topology.stages_in(order->rank);
  // Bound, its cores are its stages' alone; else every stage of the run shares them.
  std::vector<std::vector<char>> runs_here(plan.pipelines, std::vector<char>(plan.stages.size()));
  for (std::size_t p = 0; p < plan.pipelines; ++p)
    for (std::size_t s = 0; s < plan.stages.size(); ++s)
      runs_here[p][s] = p < topology.pipelines() && s < topology.stages() && topology.runs(order->rank, p, s);
  auto opened = train::Session::open(job, plan, nullptr, bound ? stages_here : 0, runs_here);
  ACTORPIPE_TRY(opened);
  train::Session& session = **opened;
  session.schedule(order->first_step, order->total_steps);
  RunOptions run;
  // Unbound, the processes of one server share its cores: the OS places their threads.
  const bool pin = bound && order->pin_threads;
  if (bound && !pin) say("its stage threads placed by the system within its cores (--no-pin)");
  run.pin_threads = pin;
  auto prepared = prepare_run(job, plan, run, session);
  ACTORPIPE_TRY(prepared);
  RunSetup& setup = **prepared;

  transport::TransportOptions tensors;
  tensors.store = {order->store_host, order->store_port};
  tensors.key_prefix = launch::store_prefix(options.token);
  auto here = launch::address_towards({order->store_host, order->store_port});
  ACTORPIPE_TRY(here);
  tensors.host = *here; // the coordinator, and the other workers, connect to it there
  tensors.rank = order->rank;
  tensors.world = order->world;
  tensors.compute_threads = stages_here;
  // Every copy of an asynchronous elastic centre, or of a parameter server that steps on
  // each push as it comes, takes part in every move, its process's stages computing
  // meanwhile. A server with staleness 0 gathers a push from every pipeline first: its
  // copies meet at each step as a lockstep round's members do.
  const auto* server = std::get_if<ParameterServer>(&setup.job.mode);
  tensors.follows_others =
      std::holds_alternative<ElasticAveraging>(setup.job.mode) || (server && server->staleness > 0);
  auto transport = transport::TensorTransport::open(tensors);
  ACTORPIPE_TRY(transport);
  // Joined on a thread of its own: a coordinator that ends meanwhile (it lost another
  // worker before the run began) ends the wait at once, not c10d's timeout.
  self->monitor(*gate);
  auto joining = std::make_shared<std::promise<Status>>();
  std::future<Status> transport_joined = joining->get_future();
  std::thread([joining, rank = transport->get()] { joining->set_value(rank->join()); }).detach();
  bool coordinator_gone = false;
  while (!coordinator_gone && transport_joined.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    self->receive([&](caf::down_msg&) { coordinator_gone = true; },
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
  if (coordinator_gone) {
    // The join waits in c10d until its timeout: the transport stays with it.
    (void)transport->release();
    return Error::run_failed(where + " ended before the run began (its messages say why)");
  }
  ACTORPIPE_TRY(transport_joined.get());
  // NCCL between its stages and their neighbours elsewhere where both are on GPUs of
  // their own; every worker opens the same list in the same order.
  auto nccl_links = (*transport)->open_gpu_links(gpu_links(job.cluster, plan, order->placement));
  ACTORPIPE_TRY(nccl_links);
  if (*nccl_links > 0)
    say(std::to_string(*nccl_links) + (*nccl_links == 1 ? " link" : " links") +
        " to stages of other processes on other GPUs go through NCCL");
  // The groups of each stage index, by their ranks: that of all its processes,
  // made now in stage order by every member alike; a round's smaller ones (ad-psgd's
  // pairs) made by their members as they first meet. Each stage's rounds run one at a
  // time, so a stage's groups need a lock only against the others' reading the map.
  const std::size_t P = plan.pipelines, S = plan.stages.size();
  struct StageGroups {
    std::mutex mutex;
    std::map<std::vector<std::size_t>, std::shared_ptr<transport::TensorTransport::Group>> by_ranks;
  };
  std::vector<StageGroups> groups(S);
  const auto ranks_of = [&](std::size_t s, const std::vector<std::size_t>& pipelines) {
    return topology.processes_of(s, pipelines);
  };
  std::vector<std::size_t> every(P);
  for (std::size_t p = 0; p < P; ++p)
    every[p] = p;
  for (std::size_t s = 0; s < S; ++s) {
    const std::vector<std::size_t> ranks = ranks_of(s, every);
    if (std::count(ranks.begin(), ranks.end(), order->rank) && ranks.size() > 1)
      groups[s].by_ranks[ranks] = (*transport)
                                      ->group("stage-" + std::to_string(s), ranks,
                                              group_gpus(job.cluster, plan, order->placement, s, every, ranks));
  }
  const auto group_of = [&](std::size_t s, const std::vector<std::size_t>& pipelines,
                            const std::vector<std::size_t>& ranks) {
    StageGroups& stage = groups[s];
    std::shared_ptr<transport::TensorTransport::Group> found;
    {
      std::lock_guard<std::mutex> lock(stage.mutex);
      if (const auto it = stage.by_ranks.find(ranks); it != stage.by_ranks.end()) return it->second;
    }
    std::string name = "stage-" + std::to_string(s) + "-ranks";
    for (const std::size_t r : ranks)
      name += "-" + std::to_string(r);
    // The members meet in the store: no lock held.
    found = (*transport)->group(name, ranks, group_gpus(job.cluster, plan, order->placement, s, pipelines, ranks));
    std::lock_guard<std::mutex> lock(stage.mutex);
    return stage.by_ranks.emplace(ranks, found).first->second;
  };
  if (setup.sync)
    setup.sync->span_processes(
        {[&](std::size_t s, std::size_t p) { return topology.runs(order->rank, p, s); },
         [&](std::size_t s, const std::vector<std::size_t>& pipelines, const std::vector<train::Payload>& tensors) {
           const std::vector<std::size_t> ranks = ranks_of(s, pipelines);
           if (ranks.size() > 1) (*transport)->all_reduce_sum(*group_of(s, pipelines, ranks), tensors);
         },
         [&](std::size_t s, std::size_t p) -> std::size_t { return topology.rank(p, s); },
         [&](std::size_t s, const std::vector<std::size_t>& pipelines, std::size_t root,
             const std::vector<train::Payload>& tensors) {
           const std::vector<std::size_t> ranks = ranks_of(s, pipelines);
           const auto at = std::find(ranks.begin(), ranks.end(), topology.rank(root, s));
           if (ranks.size() > 1 && at != ranks.end())
             (*transport)
                 ->broadcast(*group_of(s, pipelines, ranks), static_cast<std::size_t>(at - ranks.begin()), tensors);
         }});

  std::vector<StageTrace> traces(P * S);
  for (StageTrace& t : traces)
    t.keep_steps = job.output.trace_steps;
  auto failure = std::make_shared<Failure>();
  setup.job.first_step = order->first_step;
  setup.job.origin =
      Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(order->origin_ns)));
  setup.job.traces = &traces;
  std::deque<StageActivity> activities(P * S); // what heartbeats look at: a stage stuck at work
  setup.job.activities = &activities;
  setup.job.pin_threads = pin;
  setup.job.failure = failure;
  // With the coordinator's data, this process makes its pipelines' inputs and labels
  // from the rows the coordinator names; else their bytes come.
  if (session.data_fingerprint() == order->data_fingerprint)
    setup.job.make_rows = [&session](const train::BatchRows& rows) { return session.rows(rows); };
  else
    say("its training data differs from the coordinator's: the batches' bytes come from there");
  setup.job.transport = transport->get();
  if (order->inject_step > 0)
    setup.job.inject_failure = InjectedFailure{order->inject_stage, order->inject_step,
                                               static_cast<InjectedFailure::Effect>(order->inject_effect)};
  stage_host_actor host =
      spawn_stage_host(system, {&setup, &session, order->rank, topology, transport->get(), &traces, &activities, say});
  self->monitor(host);
  self->send(*gate, ready_atom::value, order->rank, host);
  say("rank " + std::to_string(order->rank) + " ready (Gloo's loop " +
      ((*transport)->loop_yields() ? "on cores its stages leave idle" : "as any thread") + ")");
  // Until the coordinator ends the run (it shuts the host down) or goes away.
  Status ended = Ok{};
  bool done = false;
  self->receive_while([&] { return !done; })([&](caf::down_msg& down) {
    done = true;
    // The host ended on the coordinator's word, or the coordinator ended the run (its
    // gate's end may overtake the host's): both end the worker. A lost link does not.
    const bool finished = down.reason == caf::exit_reason::normal || down.reason == caf::exit_reason::user_shutdown;
    if (finished) return;
    ended = Error::run_failed(where + " " + ended_text(system, down.reason));
  });
  caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
  if (ended)
    (*transport)->flush();
  else
    (*transport)->abandon();
  return ended;
}

} // namespace actorpipe::actors
