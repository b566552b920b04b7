/// run_training(): the job actor builds the plan's actors; steps run until the job's steps or
/// epochs are done, with evaluation, checkpoints, metrics and a trace along the way.

#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/plan_report.hpp>
#include <actorpipe/training.hpp>

#include "run/run_training.hpp"

#include "injected_failure.hpp"

#include "processes/control_channel.hpp"
#include "processes/coordinator.hpp"
#include "job_actor.hpp"
#include "run/run_setup.hpp"
#include "processes/worker_stages.hpp"
#include "protocol.hpp"
#include "run/metrics_writer.hpp"
#include "run/run_record.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "base/atomic_file.hpp"
#include "base/boundary.hpp"
#include "base/folder_lock.hpp"
#include "base/output_folder.hpp"
#include "base/process_memory.hpp"
#include "base/scope_exit.hpp"
#include "base/statistics.hpp"
#include "device/cuda_queries.hpp"
#include "device/placement.hpp"
#include "base/input_file.hpp"
#include "base/text.hpp"
#include "launch/placement.hpp"
#include "launch/process_place.hpp"
#include "sim/emulated_links.hpp"
#include "sim/stage_figures.hpp"
#include "train/model_export.hpp"
#include "train/session.hpp"
#include "train/sync_executor.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

namespace actorpipe {

namespace {

using actors::Clock;
using json = nlohmann::json;

/// How one attempt at a run ended, beside its result: what a restart needs.
struct Attempt {
  bool worker_lost = false;                     ///< it failed for a lost worker process
  std::optional<std::uint64_t> checkpoint_step; ///< the last checkpoint it wrote, if any
};

/// One attempt at the run (actors::run_training without restarts).
Result<RunSummary> attempt_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                    std::optional<actors::InjectedFailure> inject_failure,
                                    const actors::CoordinateOptions* coordinate, Attempt& attempt) {
  ACTORPIPE_TRY(plan.validate(job.profile, job.cluster));
  ACTORPIPE_TRY(validate(plan.schedule));
  // fp16's loss scale is each stage's own, while a backward carries the last stage's
  // through the pipeline: with several stages they would unscale by other scales.
  if (job.train.precision == Precision::fp16 && plan.stages.size() > 1)
    return Error::bad_input(job.where("train.precision") +
                            "\"fp16\" runs one stage per pipeline for now (its loss "
                            "scale is kept per stage); the plan has " +
                            std::to_string(plan.stages.size()) +
                            " stages: use \"bf16\", which needs no loss scale, or plan.stages = 1");
  const bool on_gpus = device::uses_cuda(job.cluster, plan);
  if (on_gpus) {
    const auto gpus = device::query_gpus();
    ACTORPIPE_TRY(device::check_present(job, plan, gpus ? gpus->size() : 0, gpus ? "" : gpus.error().message));
    device::reset_peak_memory();
  }
  auto data = options.data ? Result<std::shared_ptr<const TrainingData>>(options.data)
                           : load_training_data(job, options.plugins);
  ACTORPIPE_TRY(data);
  auto opened = train::Session::open(job, plan, *data);
  ACTORPIPE_TRY(opened);
  train::Session& session = **opened;

  train::Progress progress;
  if (!options.resume.empty()) {
    auto loaded = session.load_checkpoint(options.resume + "/" + std::string(checkpoint_file));
    ACTORPIPE_TRY(loaded);
    progress = *loaded;
  }
  const std::uint64_t per_epoch = session.steps_per_epoch();
  const std::uint64_t epochs = options.epochs ? options.epochs : job.train.epochs;
  const std::uint64_t total = options.steps ? options.steps : job.train.steps ? job.train.steps : epochs * per_epoch;
  if (!options.resume.empty() && progress.step >= total)
    return Error::bad_input("the checkpoint in " + options.resume + " is at step " + std::to_string(progress.step) +
                            " already; the run asks for " + std::to_string(total));
  session.schedule(progress.step + 1, total);

  const auto origin = Clock::now();
  // What the stage actors write to and read from lives on the heap: a stage stuck at
  // its work may still use it, and the run then leaves it to that stage (shut_down).
  auto traces_kept = std::make_unique<std::vector<actors::StageTrace>>(plan.pipelines * plan.stages.size());
  std::vector<actors::StageTrace>& traces = *traces_kept;
  for (actors::StageTrace& t : traces)
    t.keep_steps = job.output.trace_steps;
  auto activities = std::make_unique<std::deque<actors::StageActivity>>(plan.pipelines * plan.stages.size());
  std::deque<actors::StageActivity>* activity_records = activities.get(); // still there once left to a stuck stage
  auto prepared = actors::prepare_run(job, plan, options, session);
  ACTORPIPE_TRY(prepared);
  actors::RunSetup& setup = **prepared;
  std::optional<std::vector<std::vector<std::uint64_t>>> placement;
  std::optional<std::vector<std::string>> hosts; // by rank − 1: the machine it must be on
  if (coordinate) {
    auto placed = launch::place_stages(plan, coordinate->workers, 1);
    ACTORPIPE_TRY(placed);
    auto machines = launch::process_hosts(plan, job.cluster, *placed, 1);
    ACTORPIPE_TRY(machines);
    hosts = std::move(*machines);
    // Where the run will listen, before it writes: an address that is not this
    // machine's, or a port another listener has, is bad input, said now (CAF's words
    // for a taken port were its raw error).
    auto listening = launch::listen_on(coordinate->listen);
    if (!listening)
      return Error::bad_input("--listen " + coordinate->listen.text() +
                              ": cannot listen: " + listening.error().message);
    ::close(*listening);
    placement.emplace();
    for (const auto& pipeline : *placed)
      placement->emplace_back(pipeline.begin(), pipeline.end());
  }
  std::optional<train::SyncExecutor>& sync = setup.sync;
  const double time_scale = setup.time_scale;

  // Every input is checked: only now does the run create and write its folder.
  ACTORPIPE_TRY(make_folder_inside(options.output_dir, {}));
  auto lock = FolderLock::take(options.output_dir);
  ACTORPIPE_TRY(lock);
  ACTORPIPE_TRY(write_file_atomically(options.output_dir + "/plan.json", plan_to_json(plan, job.profile, job.cluster)));
  ACTORPIPE_TRY(train::write_model_record(job, options.output_dir));
  // A resumed run's metrics begin with the lines up to its checkpoint.
  auto metrics = actors::MetricsWriter::open(options.output_dir, options.resume, progress.step, job.output.tensorboard);
  ACTORPIPE_TRY(metrics);
  std::vector<actors::StepCounters> counters;

  // On the heap, as the system that keeps referring to it (shut_down).
  auto config_kept = std::make_unique<caf::actor_system_config>();
  caf::actor_system_config& config = *config_kept;
  actors::configure_run_system(config, coordinate ? &coordinate->tls : nullptr);
  auto system_kept = std::make_unique<caf::actor_system>(config);
  caf::actor_system& system = *system_kept;
  auto failure = std::make_shared<actors::Failure>();
  actors::JobConfig& job_config = setup.job;
  // A run of several processes: the workers run every stage; this one the job.
  std::unique_ptr<actors::Coordination> coordination;
  if (coordinate) {
    auto started = actors::start_workers(system, *coordinate, job, plan, *placement, progress.step + 1, total, origin,
                                         inject_failure, *hosts, session.data_fingerprint(), options.pin_threads);
    ACTORPIPE_TRY(started);
    coordination = std::move(*started);
    auto spawned = actors::spawn_remote_stages(system, *coordination, *placement, plan);
    ACTORPIPE_TRY(spawned);
    if (!options.resume.empty()) {
      caf::scoped_actor pusher{system};
      ACTORPIPE_TRY(actors::push_state(pusher, *coordination, *placement, session));
    }
    job_config.processes = actors::JobConfig::Processes{*placement,
                                                        std::move(spawned->stages),
                                                        coordination->hosts,
                                                        coordinate->heartbeat_timeout,
                                                        std::move(spawned->averagers),
                                                        std::move(spawned->servers),
                                                        std::move(spawned->same_data),
                                                        std::move(spawned->pipelines)};
    job_config.transport = coordination->transport.get();
  }
  job_config.time_scale = time_scale;
  job_config.first_step = progress.step + 1;
  job_config.origin = origin;
  job_config.traces = &traces;
  job_config.activities = activities.get();
  job_config.stall_timeout = options.stall_timeout;
  job_config.inject_failure = inject_failure;
  job_config.pin_threads = options.pin_threads;
  job_config.failure = failure;
  const bool asynchronous = job_config.asynchronous();
  // Where every worker makes its batches from the rows they are, this process only
  // names them: making their tensors here would cost a copy of each batch a step.
  bool rows_only = job_config.processes && job_config.processes->same_data.size() == coordinate->workers;
  if (rows_only)
    for (const auto& ranks : *placement)
      rows_only = rows_only && std::count(ranks.begin(), ranks.end(), std::uint64_t{0}) == 0;
  actors::job_actor job_actor = actors::spawn_job(system, std::move(job_config));
  // The driver's own actor, which must be gone before the system can wait for the rest.
  auto self = std::make_unique<caf::scoped_actor>(system);
  auto stage_stuck = [&] {
    std::lock_guard<std::mutex> lock(failure->mutex);
    return failure->stage_stuck;
  };
  // However this scope ends (an exception from a callback or from LibTorch included),
  // the job and its actors end before anything they write to (the traces) goes.
  auto shut_down = [&] {
    if (!job_actor) return;
    caf::anon_send_exit(job_actor, caf::exit_reason::user_shutdown);
    if (coordination) {
      // Each worker's host ends its stages and itself; the worker process then ends.
      // After a failure some may be gone: the others are told, no answer awaited (one
      // whose word is lost ends as its coordinator goes).
      bool failed = false;
      {
        std::lock_guard<std::mutex> lock(failure->mutex);
        failed = !failure->what.empty();
      }
      for (const auto& [rank, host] : coordination->hosts)
        if (failed)
          caf::anon_send(host, actors::finish_atom::value, true);
        else
          (*self)
              ->request(host, std::chrono::seconds(10), actors::finish_atom::value, false)
              .receive([](bool) {}, [](caf::error&) {});
      if (failed) coordination->transport->abandon(); // a hung worker would never take them
      coordination.reset();                           // and the gate
    }
    self.reset();
    job_actor = nullptr;
    if (stage_stuck()) {
      // Its thread never ends, nor does its actor: waiting for it would hang the run.
      // The actor system (and its config, which its threads read as they end), the
      // session, the run's setup, the traces and activities the stage may still use are
      // left to it (RunOptions::stall_timeout).
      (void)config_kept.release();
      (void)system_kept.release();
      (void)traces_kept.release();
      (void)activities.release();
      (void)prepared->release();
      (void)opened->release();
      return;
    }
    system.await_all_actors_done();
  };
  const ScopeExit on_exit(shut_down);

  RunSummary summary;
  summary.output_dir = options.output_dir;
  std::optional<Error> error;
  double step_seconds = 0;
  std::uint64_t steps_here = 0;
  std::vector<double> step_ms; // of this process's steps
  // Once no step is in flight: every stage has taken its averaging (scheduled
  // averaging adds a group's change after the step it asked at is reported).
  auto settle = [&]() -> Status {
    Status settled = Ok{};
    (*self)
        ->request(job_actor, caf::infinite, actors::settle_atom::value)
        .receive([](bool) {},
                 [&](caf::error&) {
                   std::lock_guard<std::mutex> lock(failure->mutex);
                   settled = Error::run_failed(failure->what.empty() ? "the run failed" : failure->what);
                 });
    return settled;
  };
  // Runs `use` with the model the policy trains in pipeline 0's replicas. With workers,
  // pull_state() put it there already: this process's replicas of the other pipelines
  // never trained.
  auto with_model = [&](const std::function<void()>& use) {
    if (sync && !coordination)
      sync->with_model(use);
    else
      use();
  };
  // After the step just done, of `epoch` (1-based).
  auto evaluate = [&](std::uint64_t epoch) -> Status {
    train::Evaluation e;
    // LibTorch's exceptions end here: a host that embeds the runtime gets an Error.
    try {
      with_model([&] { e = session.evaluate(); });
    } catch (const std::exception& ex) {
      return Error::run_failed("evaluation after step " + std::to_string(progress.step) + " (epoch " +
                               std::to_string(epoch) + "): " + text::message_of(ex));
    }
    summary.test_accuracy = e.accuracy;
    summary.test_loss = e.loss;
    ACTORPIPE_TRY(metrics->write(json{{"kind", "evaluation"},
                                      {"step", progress.step},
                                      {"epoch", epoch},
                                      {"test_accuracy", e.accuracy},
                                      {"test_loss", e.loss}}));
    if (options.on_evaluation) options.on_evaluation({progress.step, epoch, e.accuracy, e.loss});
    return Ok{};
  };
  // The policy's model (elastic's centre) is what is evaluated and saved; a resumed run
  // starts every replica from it.
  auto checkpoint = [&]() -> Status {
    Status saved = Ok{};
    with_model(
        [&] { saved = session.save_checkpoint(options.output_dir + "/" + std::string(checkpoint_file), progress); });
    if (saved) attempt.checkpoint_step = progress.step;
    if (saved) saved = metrics->write_table();
    return saved;
  };

  // The step `later` steps after the last answered one, handed to the job actor and
  // not yet answered.
  auto send_step = [&](std::uint64_t later) {
    const std::uint64_t at = progress.index + later - 1; // into the current epoch
    const std::uint64_t epoch = progress.epoch + at / per_epoch, index = at % per_epoch;
    const train::Batch batch = rows_only ? session.batch_rows_only(epoch, index) : session.batch(epoch, index);
    auto handle = (*self)->request(job_actor, caf::infinite, actors::step_atom::value, progress.step + later,
                                   batch.inputs, batch.labels);
    return std::make_pair(std::move(handle), Clock::now());
  };
  using InFlight = decltype(send_step(1));
  // Evaluation and the checkpoint come after every `evaluate_every`-th epoch (1-based,
  // counted from the first), every `eval_every`-th step (likewise) and after the run's
  // last step.
  const std::uint64_t evaluate_every = job.train.evaluate_every, eval_every = job.train.eval_every;
  auto steps_to_evaluation = [&] {
    const std::uint64_t epoch = (progress.epoch / evaluate_every + 1) * evaluate_every;
    const std::uint64_t steps = eval_every ? eval_every - progress.step % eval_every : total - progress.step;
    return std::min({epoch * per_epoch - (progress.epoch * per_epoch + progress.index), total - progress.step, steps});
  };
  // The steps handed to the job, oldest first. The next step's batch waits at the
  // stages, which start on it as soon as they have stepped: batching and the messages
  // that carry it stay off the step's critical path. Pipelines that step on their own
  // get more steps ahead, so that a fast one finds work while a slow one finishes its
  // share of an older step. Across processes, a step's inputs go two steps ahead: a
  // worker makes them, or their bytes land there, only when it has a free core (Gloo's
  // loop yields to the stages: transport::TransportOptions::compute_threads). Never past
  // an evaluation, which with the checkpoint reads the parameters between steps.
  std::deque<InFlight> in_flight;
  const std::size_t ahead = asynchronous ? 2 * plan.pipelines : coordination ? 2 : 1;
  auto previous_done = Clock::now();
  while (progress.step < total && !error) {
    const bool stopping = options.stop_requested && options.stop_requested();
    const std::uint64_t until_evaluation = steps_to_evaluation();
    while (in_flight.empty() || (in_flight.size() <= ahead && in_flight.size() < until_evaluation && !stopping))
      in_flight.push_back(send_step(in_flight.size() + 1));
    InFlight current = std::move(in_flight.front());
    in_flight.pop_front();
    double loss = 0;
    current.first.receive(
        [&](double l) { loss = l; },
        [&](caf::error&) {
          std::lock_guard<std::mutex> lock(failure->mutex);
          error = Error::run_failed(failure->what.empty() ? "the run failed" : failure->what);
          attempt.worker_lost = failure->worker_lost;
          // A worker lost, or a stage stuck: where the run stands, and what
          // a resume starts from.
          if (coordination || failure->stage_stuck)
            error->message +=
                "; the last completed step is " + std::to_string(progress.step) +
                (progress.step > 0 && std::filesystem::exists(options.output_dir + "/" + std::string(checkpoint_file))
                     ? ", the last checkpoint " + options.output_dir + "/" + std::string(checkpoint_file)
                     : "");
        });
    if (error) break;
    // Training on from a diverged loss only writes a checkpoint of NaNs.
    if (!std::isfinite(loss)) {
      error = Error::run_failed("step " + std::to_string(progress.step + 1) + ": the training loss is " +
                                std::to_string(loss) + " (diverged; a smaller train.lr may help)");
      break;
    }
    // A queued step starts when the one before it ends.
    const auto done = Clock::now();
    const double seconds = std::chrono::duration<double>(done - std::max(current.second, previous_done)).count();
    previous_done = done;
    step_seconds += seconds;
    ++steps_here;
    ++progress.step;
    ++progress.index;
    summary.final_loss = loss;
    StepMetrics m;
    m.step = progress.step;
    m.epoch = progress.epoch + 1;
    m.steps_per_epoch = per_epoch;
    m.total_steps = total;
    m.loss = loss;
    m.step_ms = seconds * 1000.0 * time_scale;
    step_ms.push_back(m.step_ms);
    m.samples_per_s = static_cast<double>(steps_here * plan.batch_size) / (step_seconds * time_scale);
    m.eta_s = step_seconds / static_cast<double>(steps_here) * static_cast<double>(total - progress.step);
    json line{{"kind", "step"}, {"step", m.step},       {"epoch", m.epoch},
              {"loss", loss},   {"step_ms", m.step_ms}, {"samples_per_s", m.samples_per_s}};
    // fp16: how many replica steps its loss scale has skipped so far.
    if (job.train.precision == Precision::fp16) line["skipped_steps"] = session.skipped_steps();
    const std::uint64_t resident = resident_bytes();
    line["rss_bytes"] = resident;
    std::uint64_t gpu_peak = 0;
    if (on_gpus)
      for (const std::uint64_t bytes : device::peak_memory_bytes())
        gpu_peak = std::max(gpu_peak, bytes);
    if (on_gpus) line["gpu_peak_bytes"] = gpu_peak;
    if (auto written = metrics->write(line); !written) {
      error = std::move(written).error();
      break;
    }
    counters.push_back({actors::microseconds_since(origin, done), loss, m.samples_per_s,
                        static_cast<double>(on_gpus ? gpu_peak : resident)});
    if (options.on_step) options.on_step(m);
    const std::uint64_t epoch = m.epoch;
    const bool epoch_done = progress.index == per_epoch;
    if (epoch_done) {
      ++progress.epoch;
      progress.index = 0;
    }
    // A stop waits for a step with none queued behind it: then the parameters, and
    // the checkpoint, are exactly this step's.
    const bool stop = in_flight.empty() && progress.step < total && options.stop_requested && options.stop_requested();
    const bool evaluating = (epoch_done && epoch % evaluate_every == 0) ||
                            (eval_every && progress.step % eval_every == 0) || progress.step == total;
    Status kept = Ok{};
    if (evaluating || stop) kept = settle();
    if (kept && (evaluating || stop) && coordination)
      kept = actors::pull_state(*self, *coordination, *placement, session);
    if (kept && evaluating) kept = evaluate(epoch);
    if (kept && (evaluating || stop)) kept = checkpoint();
    if (!kept) error = std::move(kept).error();
    if (stop) {
      summary.stopped = true;
      break;
    }
  }
  if (coordination && !error) actors::collect_traces(*self, *coordination, plan, traces);
  // The job shuts down every actor it built.
  shut_down();
  if (!error)
    if (auto s = metrics->write_table(); !s) error = std::move(s).error();
  // A stuck stage's actors never all end: the trace is made of their records as they
  // are, with the work the stuck stage never finished.
  const bool stuck = stage_stuck();
  const std::vector<actors::StageTrace> stuck_traces =
      stuck ? actors::traces_of_stuck_run(traces, *activity_records, origin, Clock::now(), options.stall_timeout)
            : std::vector<actors::StageTrace>{};
  if (auto s = write_file_atomically(options.output_dir + "/trace.json",
                                     actors::trace_of(stuck ? stuck_traces : traces, plan, job.cluster, time_scale,
                                                      placement ? &*placement : nullptr, counters));
      !s && !error)
    error = std::move(s).error();
  if (stuck) return Error::run_failed(error ? error->message : "a stage's thread is stuck");
  if (error) return *std::move(error);
  summary.steps = progress.step;
  summary.epochs_finished = progress.epoch;
  summary.epoch = progress.step == 0 ? 0 : progress.index == 0 ? progress.epoch : progress.epoch + 1;
  summary.peak_stashed.assign(plan.stages.size(), 0);
  for (const actors::StageTrace& t : traces)
    summary.peak_stashed[t.stage] = std::max(summary.peak_stashed[t.stage], t.peak_stashed);
  if (on_gpus) summary.peak_gpu_bytes = device::peak_memory_bytes();
  summary.seconds = step_seconds;
  summary.samples_per_s =
      step_seconds > 0 ? static_cast<double>(steps_here * plan.batch_size) / (step_seconds * time_scale) : 0;
  summary.median_step_ms = median(step_ms);
  return summary;
}

} // namespace

Result<RunSummary> actors::run_training(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                        const CoordinateOptions* coordinate) {
  std::optional<InjectedFailure> inject_failure;
  if (!options.inject_failure.empty()) {
    auto failure = parse_injected_failure(options.inject_failure, plan.stages.size(), coordinate != nullptr);
    ACTORPIPE_TRY(failure);
    inject_failure = *failure;
  }
  RunOptions current = options;
  for (std::uint32_t restart = 1;; ++restart) {
    Attempt attempt;
    auto result = attempt_training(job, plan, current, inject_failure, coordinate, attempt);
    if (result || !attempt.worker_lost || !coordinate || restart > coordinate->restarts) return result;
    // Resumed from this run's last checkpoint (or where the run itself began): the steps
    // since it are lost, no more.
    if (attempt.checkpoint_step) current.resume = options.output_dir;
    inject_failure.reset(); // an injected fault strikes once
    if (coordinate->log)
      coordinate->log(
          result.error().message + "; restart " + std::to_string(restart) + " of " +
          std::to_string(coordinate->restarts) + ": starting the workers again, resuming " +
          (current.resume.empty() ? std::string("from the start") : "from the checkpoint in " + current.resume));
  }
}

Result<RunSummary> run_training(const JobSpec& job, const Plan& plan, const RunOptions& options) {
  return at_boundary("run", [&] { return actors::run_training(job, plan, options); });
}

} // namespace actorpipe
