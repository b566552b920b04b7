/// The training actors' protocol, stepped one message at a time on CAF's deterministic
/// test coordinator: no threads, no sleeps. Stage computations are scripted fakes, and
/// the job and pipeline a stage reports to are test doubles where a test watches the
/// stage alone.

#define CAF_SUITE actor_protocol

#include "averager_actor.hpp"
#include "group_scheduler_actor.hpp"
#include "job_actor.hpp"
#include "parameter_server_actor.hpp"
#include "pipeline_actor.hpp"
#include "server_copy_actor.hpp"
#include "share_dealer.hpp"
#include "stage_actor.hpp"
#include "stall_watchdog_actor.hpp"
#include "replica_barrier.hpp"

#include "train/stage_computation.hpp"
#include "train/tensor_box.hpp"

#include <actorpipe/schedule_builders.hpp>

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace actorpipe;
using namespace actorpipe::actors;

namespace {

/// A stage's computation that writes what it is asked to do to a shared log
/// ("p0s1 F0" …) and throws where the test scripts it to.
struct FakeStage final : train::StageComputation {
  std::string name;
  std::vector<std::string>* log = nullptr;
  std::optional<std::size_t> fail_forward; ///< micro-batch whose forward throws
  /// Its forward throws what no stage catches (no std::exception): the actor ends.
  bool end_in_forward = false;
  bool fail_step = false;
  std::map<std::size_t, train::Payload> seen; ///< the input of each micro-batch's latest forward
  std::set<std::size_t> held;                 ///< micro-batches forwarded and not yet backward
  double loss_sum = 0;                        ///< Σ input × samples of this step's last-stage forwards
  double square_sum = 0;                      ///< its part of the gradient's norm (clipping)
  std::optional<double> stepped_norm;         ///< the norm its latest step was given
  /// Where set, each action first logs what the stage's activity says meanwhile:
  /// "busy with 1" (step 1) or "idle".
  const StageActivity* watched = nullptr;

  void log_activity() {
    if (!watched) return;
    log->push_back(watched->busy_since_ns.load() != 0 ? "busy with " + std::to_string(watched->step.load()) : "idle");
  }

  train::Payload forward(std::size_t micro, const train::Payload& input) override {
    log_activity();
    log->push_back(name + " F" + std::to_string(micro));
    if (fail_forward == micro) throw std::runtime_error("scripted failure");
    seen[micro] = input;
    held.insert(micro);
    return input;
  }
  void forward_loss(std::size_t micro, const train::Payload& input, const train::Payload&, double,
                    std::uint32_t samples) override {
    log_activity();
    log->push_back(name + " F" + std::to_string(micro));
    if (fail_forward == micro) throw std::runtime_error("scripted failure");
    if (end_in_forward) throw 1;
    seen[micro] = input;
    held.insert(micro);
    loss_sum += input->tensor.item<double>() * samples;
  }
  double take_loss_sum() override { return std::exchange(loss_sum, 0.0); }
  train::Payload backward(std::size_t micro, const train::Payload&) override {
    log_activity();
    log->push_back(name + " B" + std::to_string(micro));
    held.erase(micro);
    return train::wrap(torch::zeros({1}));
  }
  train::Payload backward_input(std::size_t micro, const train::Payload&) override {
    log_activity();
    log->push_back(name + " I" + std::to_string(micro));
    return train::wrap(torch::zeros({1}));
  }
  void backward_weight(std::size_t micro) override {
    log_activity();
    log->push_back(name + " W" + std::to_string(micro));
    held.erase(micro);
  }
  std::size_t stashed() const override { return held.size(); }
  double gradient_square_sum() override {
    log_activity();
    log->push_back(name + " norm");
    return square_sum;
  }
  void step(std::uint64_t, double gradient_norm) override {
    log_activity();
    stepped_norm = gradient_norm;
    log->push_back(name + " step");
    if (fail_step) throw std::runtime_error("scripted optimizer failure");
  }
};

train::Payload value(double x) { return train::wrap(torch::full({1, 1}, x, torch::kFloat64)); }
/// The same, packed for a stage of this process.
Parcel parcel(double x) { return pack(value(x)); }

/// Answers no step and no settling; keeps the failures reported to it.
job_actor::behavior_type job_double(job_actor::pointer, std::vector<std::string>* failures) {
  return {
      [](step_atom, std::uint64_t, train::Payload&, train::Payload&) -> caf::result<double> {
        return caf::make_error(caf::sec::unexpected_message);
      },
      [](settle_atom) -> caf::result<bool> { return caf::make_error(caf::sec::unexpected_message); },
      [=](failed_atom, const std::string& what) { failures->push_back(what); },
  };
}

/// Answers no step; takes the stages' reports (which the tests `expect`).
pipeline_actor::behavior_type pipeline_double(pipeline_actor::pointer) {
  return {
      [](step_atom, std::uint64_t, Parcel&, Parcel&) -> caf::result<double> {
        return caf::make_error(caf::sec::unexpected_message);
      },
      [](done_atom, std::uint64_t, std::uint64_t, double) {},
      [](norm_atom, std::uint64_t, double) {},
  };
}

/// A stage that only waits for the group scheduler: its leave to go on alone is
/// appended to `released` as a group of one.
stage_actor::behavior_type scheduled_stage_double(stage_actor::pointer, std::uint64_t pipeline,
                                                  std::vector<std::vector<std::size_t>>* released) {
  return {
      [](connect_atom, StageLinks&) {},
      [](turn_atom) {},
      [](forward_atom, std::uint64_t, std::uint64_t, Parcel&) {},
      [](labels_atom, std::uint64_t, std::uint64_t, Parcel&, double) {},
      [](backward_atom, std::uint64_t, std::uint64_t, Parcel&) {},
      [=](synced_atom, std::uint64_t, bool) { released->push_back({pipeline}); },
      [](norm_atom, std::uint64_t, double) {},
      [](settle_atom) { return true; },
  };
}

/// An averager that only records: each group it is told to average is appended to
/// `released`.
averager_actor::behavior_type averager_double(averager_actor::pointer,
                                              std::vector<std::vector<std::size_t>>* released) {
  return {
      [=](average_atom, const std::vector<std::uint64_t>& pipelines, const std::vector<std::uint64_t>&) {
        released->emplace_back(pipelines.begin(), pipelines.end());
      },
  };
}

/// Whether the groups since the count started connect every pipeline.
struct Connectivity {
  std::vector<std::size_t> part;
  explicit Connectivity(std::size_t n) : part(n) { std::iota(part.begin(), part.end(), std::size_t{0}); }
  std::size_t find(std::size_t p) { return part[p] == p ? p : part[p] = find(part[p]); }
  void add(const std::vector<std::size_t>& g) {
    for (std::size_t i = 1; i < g.size(); ++i)
      part[find(g[i])] = find(g[0]);
  }
  bool connected() {
    for (std::size_t p = 1; p < part.size(); ++p)
      if (find(p) != find(0)) return false;
    return true;
  }
};

struct fixture : test_coordinator_fixture<> {
  std::vector<std::string> log;
  std::vector<std::string> failures; ///< what the job double was told
  std::map<std::pair<std::size_t, std::size_t>, FakeStage> fakes;
  job_actor job = sys.spawn(job_double, &failures);
  pipeline_actor pipeline = sys.spawn(pipeline_double);
  std::vector<caf::actor> spawned{caf::actor_cast<caf::actor>(job), caf::actor_cast<caf::actor>(pipeline)};

  /// The system waits for every actor before it goes: the test's actors end here.
  ~fixture() override {
    for (const caf::actor& actor : spawned)
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    run();
  }

  FakeStage& fake(std::size_t p, std::size_t s) {
    FakeStage& f = fakes[{p, s}];
    f.name = "p" + std::to_string(p) + "s" + std::to_string(s);
    f.log = &log;
    return f;
  }

  /// Stage s of `stages` of pipeline p, on the scheduler, running `schedule`'s actions.
  stage_actor stage(std::size_t p, std::size_t s, const Schedule& schedule, StageActivity* activity = nullptr,
                    bool clipping = false) {
    StageConfig config;
    config.clipping = clipping;
    config.activity = activity;
    config.computation = &fake(p, s);
    config.actions = schedule.stages[s];
    config.pipeline = p;
    config.stage = s;
    config.stages = schedule.stages.size();
    config.detached = false;
    stage_actor actor = spawn_stage(sys, std::move(config));
    spawned.push_back(caf::actor_cast<caf::actor>(actor));
    return actor;
  }

  /// Links every stage of pipeline `stages` in order, to the doubles and, where given,
  /// to a sync round with `replicas`.
  void connect(const std::vector<stage_actor>& stages, std::shared_ptr<actors::ReplicaBarrier> round = {},
               const std::vector<stage_actor>& replicas = {}) {
    for (std::size_t s = 0; s < stages.size(); ++s)
      self->send(stages[s], connect_atom::value,
                 StageLinks{.previous = s > 0 ? stages[s - 1] : stage_actor{},
                            .next = s + 1 < stages.size() ? stages[s + 1] : stage_actor{},
                            .pipeline = pipeline,
                            .job = job,
                            .step_end = round ? StepEnd(ReplicaRound{round, replicas}) : StepEnd(Alone{})});
    run();
  }

  /// A pipeline actor of `config`, its stages linked to it and to each other in order.
  pipeline_actor real_pipeline(const PipelineConfig& config) {
    pipeline_actor real = spawn_pipeline(sys, config);
    spawned.push_back(caf::actor_cast<caf::actor>(real));
    const std::vector<stage_actor>& stages = config.stages;
    for (std::size_t s = 0; s < stages.size(); ++s)
      self->send(stages[s], connect_atom::value,
                 StageLinks{.previous = s > 0 ? stages[s - 1] : stage_actor{},
                            .next = s + 1 < stages.size() ? stages[s + 1] : stage_actor{},
                            .pipeline = real,
                            .job = job});
    run();
    return real;
  }

  /// Stage 0 of each of `pipelines` one-stage pipelines (one micro-batch), averaging
  /// asynchronously: their snapshots and changes logged, asking every `period` steps
  /// (an averager's; the group scheduler hears every step).
  std::vector<stage_actor> averaging_replicas(std::size_t pipelines, std::uint64_t period = 1) {
    const Schedule one = gpipe_schedule(1, {1});
    std::vector<stage_actor> replicas;
    for (std::size_t p = 0; p < pipelines; ++p) {
      StageConfig config;
      config.computation = &fake(p, 0);
      config.actions = one.stages[0];
      config.pipeline = p;
      config.detached = false;
      config.period = period;
      config.snapshot = [this, p] { log.push_back("p" + std::to_string(p) + "s0 snapshot"); };
      config.correct = [this, p] { log.push_back("p" + std::to_string(p) + "s0 change"); };
      replicas.push_back(spawn_stage(sys, std::move(config)));
      spawned.push_back(caf::actor_cast<caf::actor>(replicas.back()));
    }
    return replicas;
  }

  /// After a group of pipelines 0, 1 (one process) and 2 (another): each process's side
  /// (`here`, `there`) took it once, and each pipeline was released once, by its own.
  void each_process_took_the_group_and_released_its_own(const std::vector<std::vector<std::size_t>>& here,
                                                        const std::vector<std::vector<std::size_t>>& there,
                                                        std::vector<std::vector<std::size_t>> released) {
    CAF_CHECK_EQUAL(here, (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
    CAF_CHECK_EQUAL(there, (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
    std::sort(released.begin(), released.end());
    CAF_CHECK_EQUAL(released, (std::vector<std::vector<std::size_t>>{{0}, {1}, {2}}));
    CAF_CHECK(failures.empty());
  }

  /// `pipelines` stages that only record each release (scheduled_stage_double).
  std::vector<stage_actor> recording_replicas(std::size_t pipelines, std::vector<std::vector<std::size_t>>& released) {
    std::vector<stage_actor> replicas;
    for (std::uint64_t p = 0; p < pipelines; ++p) {
      replicas.push_back(sys.spawn(scheduled_stage_double, p, &released));
      spawned.push_back(caf::actor_cast<caf::actor>(replicas.back()));
    }
    return replicas;
  }

  /// The averager of `replicas`, on the scheduler, appending each group to `groups`.
  averager_actor averager_of(const std::vector<stage_actor>& replicas, std::vector<std::vector<std::size_t>>& groups) {
    AveragerConfig config;
    config.stages = replicas;
    config.average = [&groups](const std::vector<std::size_t>& group) { groups.push_back(group); };
    config.job = job;
    config.detached = false;
    auto averager = spawn_averager(sys, config);
    spawned.push_back(caf::actor_cast<caf::actor>(averager));
    return averager;
  }

  /// A job of `pipelines` one-stage pipelines (one micro-batch each) on the scheduler,
  /// counting its reductions.
  job_actor real_job(std::size_t pipelines, int* reductions) {
    JobConfig config;
    config.plan.pipelines = pipelines;
    config.plan.stages.resize(1);
    config.plan.batch_size = pipelines;
    config.plan.schedule = gpipe_schedule(1, {1});
    config.computation = [this](std::size_t p, std::size_t s) -> train::StageComputation& { return fake(p, s); };
    config.sync = [this, reductions](std::size_t, std::uint64_t) {
      ++*reductions;
      log.push_back("reduce");
      return false;
    };
    config.detached = false;
    config.failure = std::make_shared<Failure>();
    return spawn_job(sys, std::move(config));
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(actor_protocol, fixture)

CAF_TEST(a_stage_failing_mid_step_reports_once_and_computes_nothing_after) {
  const Schedule gpipe = gpipe_schedule(2, {1, 1});
  auto first = stage(0, 0, gpipe);
  auto last = stage(0, 1, gpipe);
  connect({first, last});
  fake(0, 1).fail_forward = 1;
  for (std::uint64_t m = 0; m < 2; ++m) {
    self->send(last, labels_atom::value, std::uint64_t{1}, m, parcel(0), 0.5);
    self->send(first, forward_atom::value, std::uint64_t{1}, m, parcel(m + 1.0));
  }
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(last).with(_, 1u, 0u, _, 0.5));
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(last).with(_, 1u, 1u, _, 0.5));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(first).with(_, 1u, 0u, _));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(first).with(_, 1u, 1u, _));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(first).to(last).with(_, 1u, 0u, _));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(first).to(last).with(_, 1u, 1u, _));
  expect((failed_atom, std::string),
         from(last).to(job).with(_, "stage 1 of pipeline 0, forward of micro-batch 1 in step 1: scripted failure"));
  // Inputs that arrive after the failure are taken and left alone: no retry, no second
  // report, no gradient sent back.
  self->send(last, labels_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(0), 0.5);
  self->send(last, forward_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(3));
  run();
  CAF_CHECK_EQUAL(failures.size(), 1u);
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 F1", "p0s1 F0", "p0s1 F1"}));
}

CAF_TEST(an_optimizer_failure_is_reported_as_the_optimizer_step) {
  const Schedule one = gpipe_schedule(1, {2});
  auto only = stage(0, 0, one);
  connect({only});
  fake(0, 0).fail_step = true;
  self->send(only, labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 1.0);
  self->send(only, forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(1));
  run();
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p0s0 step"}));
  CAF_REQUIRE_EQUAL(failures.size(), 1u);
  CAF_CHECK_EQUAL(failures[0], "stage 0 of pipeline 0, optimizer step in step 1: scripted optimizer failure");
  // The next step's inputs find the stage failed: the optimizer is not tried again.
  self->send(only, labels_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(0), 1.0);
  self->send(only, forward_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(1));
  run();
  CAF_CHECK_EQUAL(log.size(), 3u);
  CAF_CHECK_EQUAL(failures.size(), 1u);
}

CAF_TEST(a_stage_is_marked_busy_while_it_computes_and_idle_while_it_waits_for_its_next_message) {
  const Schedule one = gpipe_schedule(1, {2});
  StageActivity activity;
  fake(0, 0).watched = &activity;
  auto only = stage(0, 0, one, &activity);
  connect({only});
  CAF_CHECK_EQUAL(activity.busy_since_ns.load(), 0);
  for (const std::uint64_t step : {1u, 2u}) {
    self->send(only, labels_atom::value, step, std::uint64_t{0}, parcel(0), 1.0);
    self->send(only, forward_atom::value, step, std::uint64_t{0}, parcel(1));
    run();
    // Waiting for the next step's inputs is not work: a watchdog must not count it.
    CAF_CHECK_EQUAL(activity.busy_since_ns.load(), 0);
  }
  CAF_CHECK_EQUAL(
      log, (std::vector<std::string>{"busy with 1", "p0s0 F0", "busy with 1", "p0s0 B0", "busy with 1", "p0s0 step",
                                     "busy with 2", "p0s0 F0", "busy with 2", "p0s0 B0", "busy with 2", "p0s0 step"}));
}

CAF_TEST(a_stage_busy_past_the_limit_is_stuck_and_work_within_work_keeps_the_first_start) {
  using namespace std::chrono_literals;
  StageActivity activity;
  activity.pipeline = 3;
  activity.stage = 1;
  CAF_CHECK(!stuck_text(activity, Clock::now() + 1h, 1s)); // idle: never stuck
  {
    const BusyScope work(&activity, 57);
    const std::int64_t since = activity.busy_since_ns.load();
    CAF_REQUIRE(since != 0);
    {
      const BusyScope within(&activity, 58);
      CAF_CHECK_EQUAL(activity.busy_since_ns.load(), since);
      CAF_CHECK_EQUAL(activity.step.load(), 57u);
    }
    CAF_CHECK_EQUAL(activity.busy_since_ns.load(), since); // the work goes on
    const Clock::time_point start{Clock::duration(since)};
    CAF_CHECK(!stuck_text(activity, start + 59s, 60s));
    const auto stuck = stuck_text(activity, start + 61s, 60s);
    CAF_REQUIRE(stuck.has_value());
    CAF_CHECK_EQUAL(*stuck, "stage 1 of pipeline 3 has worked on step 57 for 61.0 s without finishing");
  }
  CAF_CHECK_EQUAL(activity.busy_since_ns.load(), 0);
  const BusyScope unwatched(nullptr, 1); // a stage nobody watches: nothing to mark
}

CAF_TEST(the_stall_watchdog_fails_the_job_once_a_stage_of_its_process_is_stuck_and_not_before) {
  using namespace std::chrono_literals;
  std::deque<StageActivity> activities(2);
  activities[1].pipeline = 1;
  activities[1].stage = 1;
  auto marked = std::make_shared<Failure>();
  spawned.push_back(
      caf::actor_cast<caf::actor>(spawn_stall_watchdog(sys, {{&activities[0], &activities[1]}, 60s, job, marked})));
  // The watchdog looks at once, then every quarter of the limit.
  sched.run();
  CAF_CHECK(failures.empty());
  // Stage 1 of pipeline 1 goes into step 7's work, 59 s ago: within the limit.
  activities[1].step = 7;
  activities[1].busy_since_ns = (Clock::now() - 59s).time_since_epoch().count();
  sched.clock().advance_time(15s);
  sched.run();
  CAF_CHECK(failures.empty());
  CAF_CHECK(!marked->stage_stuck);
  // Still at it past the limit: the job is told, once, and the run marked.
  activities[1].busy_since_ns = (Clock::now() - 61s).time_since_epoch().count();
  sched.clock().advance_time(15s);
  sched.run();
  CAF_REQUIRE_EQUAL(failures.size(), 1u);
  CAF_CHECK(failures[0].starts_with("stage 1 of pipeline 1 has worked on step 7 for 61."));
  CAF_CHECK(failures[0].ends_with(" s without finishing (its thread is stuck)"));
  CAF_CHECK(marked->stage_stuck);
  sched.clock().advance_time(15s);
  sched.run();
  CAF_CHECK_EQUAL(failures.size(), 1u);
}

CAF_TEST(the_next_steps_inputs_arriving_early_wait_for_this_step) {
  const Schedule one = gpipe_schedule(1, {1});
  auto only = stage(0, 0, one);
  connect({only});
  const Parcel step1 = parcel(1), step2 = parcel(2);
  // Step 2's micro-batch comes first: the stage takes it and computes nothing.
  inject((labels_atom, std::uint64_t, std::uint64_t, Parcel, double),
         from(self).to(only).with(labels_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(0), 1.0));
  inject((forward_atom, std::uint64_t, std::uint64_t, Parcel),
         from(self).to(only).with(forward_atom::value, std::uint64_t{2}, std::uint64_t{0}, step2));
  CAF_CHECK(log.empty());
  // Step 1's arrives: step 1 runs and reports, then step 2 at once, in that order.
  inject((labels_atom, std::uint64_t, std::uint64_t, Parcel, double),
         from(self).to(only).with(labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 1.0));
  CAF_CHECK(log.empty());
  inject((forward_atom, std::uint64_t, std::uint64_t, Parcel),
         from(self).to(only).with(forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, step1));
  expect((done_atom, std::uint64_t, std::uint64_t, double), from(only).to(pipeline).with(_, 1u, 0u, 1.0));
  expect((done_atom, std::uint64_t, std::uint64_t, double), from(only).to(pipeline).with(_, 2u, 0u, 2.0));
  CAF_CHECK_EQUAL(log,
                  (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p0s0 step", "p0s0 F0", "p0s0 B0", "p0s0 step"}));
  CAF_CHECK(failures.empty());
}

CAF_TEST(the_replica_last_to_its_gradients_reduces_them_and_releases_the_others) {
  const Schedule one = gpipe_schedule(1, {1});
  auto replica0 = stage(0, 0, one);
  auto replica1 = stage(1, 0, one);
  int reductions = 0;
  auto round = std::make_shared<actors::ReplicaBarrier>(0, 2, [&](std::uint64_t) {
    ++reductions;
    log.push_back("reduce");
    return false; // the replicas step themselves
  });
  connect({replica0}, round, {replica0, replica1});
  connect({replica1}, round, {replica0, replica1});
  // Pipeline 0's replica has its gradients first: it waits, and nothing is reduced.
  self->send(replica0, labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 0.5);
  self->send(replica0, forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(1));
  run();
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0"}));
  CAF_CHECK_EQUAL(reductions, 0);
  // Pipeline 1's completes the round: it reduces, steps and releases pipeline 0's.
  self->send(replica1, labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 0.5);
  self->send(replica1, forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(2));
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(replica1).with(_, 1u, 0u, _, 0.5));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(replica1).with(_, 1u, 0u, _));
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p1s0 F0", "p1s0 B0", "reduce", "p1s0 step"}));
  expect((synced_atom, std::uint64_t, bool), from(replica1).to(replica0).with(_, 1u, false));
  CAF_CHECK_EQUAL(log.back(), "p0s0 step");
  run();
  CAF_CHECK_EQUAL(reductions, 1);
  CAF_CHECK(failures.empty());
}

CAF_TEST(a_round_that_steps_every_replica_leaves_none_to_step_again) {
  const Schedule one = gpipe_schedule(1, {1});
  auto replica0 = stage(0, 0, one);
  auto replica1 = stage(1, 0, one);
  // As parameter averaging runs: every replica steps on its own gradient, then the
  // parameters are averaged, all on the last arrival's thread.
  auto round = std::make_shared<actors::ReplicaBarrier>(0, 2, [&](std::uint64_t) {
    fake(0, 0).step(1, 0);
    fake(1, 0).step(1, 0);
    log.push_back("average");
    return true;
  });
  connect({replica0}, round, {replica0, replica1});
  connect({replica1}, round, {replica0, replica1});
  self->send(replica0, labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 0.5);
  self->send(replica0, forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(1));
  run();
  self->send(replica1, labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 0.5);
  self->send(replica1, forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(2));
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(replica1).with(_, 1u, 0u, _, 0.5));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(replica1).with(_, 1u, 0u, _));
  expect((synced_atom, std::uint64_t, bool), from(replica1).to(replica0).with(_, 1u, true));
  run();
  // One step each, the round's; neither the last arrival nor the released one stepped again.
  CAF_CHECK_EQUAL(
      log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p1s0 F0", "p1s0 B0", "p0s0 step", "p1s0 step", "average"}));
  CAF_CHECK(failures.empty());
}

CAF_TEST(a_replica_barrier_refuses_arrivals_out_of_protocol) {
  int reductions = 0;
  actors::ReplicaBarrier round(3, 2, [&](std::uint64_t) {
    ++reductions;
    return false;
  });
  auto refused = [&](std::uint64_t step, std::size_t pipeline) -> std::string {
    try {
      round.arrive(step, pipeline);
    } catch (const std::logic_error& e) {
      return e.what();
    }
    return "";
  };
  CAF_CHECK_EQUAL(refused(1, 2), "sync of stage 3: gradients from unknown pipeline 2");
  using Arrival = actors::ReplicaBarrier::Arrival;
  CAF_CHECK(round.arrive(1, 0) == Arrival::waiting);
  CAF_CHECK_EQUAL(refused(1, 0), "sync of stage 3: pipeline 0 sent gradients of step 1 while step 1 is being reduced");
  CAF_CHECK_EQUAL(refused(2, 1), "sync of stage 3: pipeline 1 sent gradients of step 2 while step 1 is being reduced");
  CAF_CHECK(round.arrive(1, 1) == Arrival::reduced);
  CAF_CHECK_EQUAL(reductions, 1);
  // The round is open again: the next step's arrivals count afresh.
  CAF_CHECK(round.arrive(2, 1) == Arrival::waiting);
  CAF_CHECK(round.arrive(2, 0) == Arrival::reduced);
  CAF_CHECK_EQUAL(reductions, 2);
}

CAF_TEST(a_replica_lost_before_its_round_completes_fails_the_step_and_releases_no_one) {
  int reductions = 0;
  auto job2 = real_job(2, &reductions);
  spawned.push_back(caf::actor_cast<caf::actor>(job2));
  run();
  fake(1, 0).end_in_forward = true;
  auto step = self->request(job2, caf::infinite, step_atom::value, std::uint64_t{1}, train::wrap(torch::ones({2, 1})),
                            train::wrap(torch::zeros({2, 1})));
  run();
  std::string answer;
  step.receive([&](double) { answer = "a loss"; }, [&](caf::error& e) { answer = sys.render(e); });
  CAF_CHECK_NOT_EQUAL(answer.find("stage 0 of pipeline 1 ended"), std::string::npos);
  // Pipeline 0's replica computed and waits; nothing was reduced and no one stepped.
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p1s0 F0"}));
  CAF_CHECK_EQUAL(reductions, 0);
}

CAF_TEST(shutdown_while_messages_are_in_flight_ends_every_actor_and_answers_the_step) {
  std::vector<std::string> unused;
  JobConfig config;
  config.plan.pipelines = 2;
  config.plan.stages.resize(2);
  config.plan.batch_size = 4;
  config.plan.schedule = gpipe_schedule(2, {1, 1});
  config.computation = [this](std::size_t p, std::size_t s) -> train::StageComputation& { return fake(p, s); };
  config.sync = [](std::size_t, std::uint64_t) { return false; };
  config.detached = false;
  config.failure = std::make_shared<Failure>();
  const std::size_t before = sys.registry().running();
  auto real_job = spawn_job(sys, std::move(config));
  run();
  // 2 × 2 stages and 2 pipelines beside the job.
  CAF_CHECK_EQUAL(sys.registry().running(), before + 1 + 4 + 2);
  auto step = self->request(real_job, caf::infinite, step_atom::value, std::uint64_t{1},
                            train::wrap(torch::ones({4, 1})), train::wrap(torch::zeros({4, 1})));
  // The step reaches the pipelines and the first micro-batches the stages; the rest is
  // still in the mailboxes when the job is shut down. What is queued ahead of a stage's
  // exit may still run; what matters is that every actor ends and the step is answered.
  for (int i = 0; i < 6; ++i)
    CAF_REQUIRE(sched.try_run_once());
  const std::size_t computed = log.size();
  CAF_CHECK(sched.has_job());
  self->send_exit(real_job, caf::exit_reason::user_shutdown);
  run();
  CAF_CHECK_EQUAL(sys.registry().running(), before);
  std::string answer;
  step.receive([&](double) { answer = "a loss"; }, [&](caf::error& e) { answer = sys.render(e); });
  CAF_CHECK_NOT_EQUAL(answer.find("the job was shut down"), std::string::npos);
  CAF_MESSAGE("computed " << computed << " actions before the shutdown, " << log.size() << " in all");
}

CAF_TEST(stages_ask_the_group_scheduler_after_their_step_and_compute_on_while_a_group_averages_on_its_timer) {
  const std::vector<stage_actor> replicas = averaging_replicas(3);
  std::vector<std::vector<std::size_t>> averaged;
  const averager_actor averager = averager_of(replicas, averaged);
  GroupSchedulerConfig config; // a window of 1 ms, doubled for a lone asker
  config.stages = {{replicas[0]}, {replicas[1]}, {replicas[2]}};
  config.averagers = {std::vector<averager_actor>(3, averager)};
  config.job = job;
  auto scheduler = spawn_group_scheduler(sys, config);
  spawned.push_back(caf::actor_cast<caf::actor>(scheduler));
  for (std::size_t p = 0; p < 3; ++p)
    self->send(replicas[p], connect_atom::value,
               StageLinks{.pipeline = pipeline, .job = job, .step_end = GroupAsk{scheduler}});
  sched.run();
  // Pipeline 0 computes, steps on its own gradient and asks.
  self->send(replicas[0], labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 1.0);
  self->send(replicas[0], forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(1));
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(replicas[0]));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(replicas[0]));
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(replicas[0]).to(scheduler).with(_, 0u, 0u, 1u));
  // Having asked, it reports the step done: the next may start while its group forms.
  expect((done_atom, std::uint64_t, std::uint64_t, double), from(replicas[0]).to(pipeline).with(_, 1u, 0u, _));
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p0s0 step", "p0s0 snapshot"}));
  // Alone when its window closes: the window doubles and nobody is let go.
  sched.clock().advance_time(std::chrono::milliseconds(1));
  sched.run();
  CAF_CHECK(averaged.empty());
  // Pipeline 1 asks within the longer window. Pipeline 0 meanwhile computes its step 2,
  // and stops at its end: no step, no ask, while step 1's answer is out.
  self->send(replicas[1], labels_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(0), 1.0);
  self->send(replicas[1], forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, parcel(2));
  self->send(replicas[0], labels_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(0), 1.0);
  self->send(replicas[0], forward_atom::value, std::uint64_t{2}, std::uint64_t{0}, parcel(3));
  sched.run();
  CAF_CHECK(averaged.empty());
  CAF_CHECK_EQUAL(std::count(log.begin(), log.end(), "p0s0 B0"), 2);
  CAF_CHECK_EQUAL(std::count(log.begin(), log.end(), "p0s0 step"), 1);
  // Pipeline 1 is between steps with its ask out: it settles when it has its change.
  auto settled = self->request(replicas[1], caf::infinite, settle_atom::value);
  sched.run();
  CAF_CHECK(self->mailbox().empty());
  // At the window's end the stage's averager makes the two members' changes and
  // releases both. Pipeline 0 takes its change, steps and asks step 2; pipeline 1,
  // between steps, takes its change at once and settles.
  sched.clock().advance_time(std::chrono::milliseconds(1));
  expect((tick_atom, std::uint64_t, std::uint64_t), from(scheduler).to(scheduler).with(_, 0u, _));
  expect((average_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(scheduler).to(averager).with(_, std::vector<std::uint64_t>{0, 1}, std::vector<std::uint64_t>{1, 1}));
  CAF_CHECK_EQUAL(averaged, (std::vector<std::vector<std::size_t>>{{0, 1}}));
  expect((synced_atom, std::uint64_t, bool), from(averager).to(replicas[0]).with(_, 1u, true));
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(replicas[0]).to(scheduler).with(_, 0u, 0u, 2u));
  expect((done_atom, std::uint64_t, std::uint64_t, double), from(replicas[0]).to(pipeline).with(_, 2u, 0u, _));
  expect((synced_atom, std::uint64_t, bool), from(averager).to(replicas[1]).with(_, 1u, true));
  bool answer = false;
  settled.receive([&](bool b) { answer = b; }, [](caf::error&) {});
  CAF_CHECK(answer);
  const auto at = [&](const std::string& entry, std::size_t nth = 0) {
    auto it = log.begin();
    for (std::size_t i = 0; i <= nth; ++i)
      it = std::find(i ? std::next(it) : log.begin(), log.end(), entry);
    return std::distance(log.begin(), it);
  };
  // Pipeline 0's change lands between the end of its step 2 and that step's optimizer
  // step; each pipeline stepped once per step, the averaging steps no one.
  CAF_CHECK_LESS(at("p0s0 B0", 1), at("p0s0 change"));
  CAF_CHECK_LESS(at("p0s0 change"), at("p0s0 step", 1));
  CAF_CHECK_EQUAL(std::count(log.begin(), log.end(), "p0s0 step"), 2);
  CAF_CHECK_EQUAL(std::count(log.begin(), log.end(), "p1s0 step"), 1);
  CAF_CHECK_EQUAL(std::count(log.begin(), log.end(), "p1s0 change"), 1);
  // A second ask from a pipeline already waiting breaks the protocol: the job hears.
  self->send(scheduler, ask_atom::value, std::uint64_t{0}, std::uint64_t{2}, std::uint64_t{1});
  self->send(scheduler, ask_atom::value, std::uint64_t{0}, std::uint64_t{2}, std::uint64_t{1});
  sched.run();
  CAF_REQUIRE_EQUAL(failures.size(), 1u);
  CAF_CHECK_NOT_EQUAL(failures[0].find("pipeline 2 asked twice"), std::string::npos);
}

CAF_TEST(a_group_whose_members_live_in_two_processes_is_averaged_by_both_which_release_their_own) {
  // Pipelines 0 and 1 in one process, 2 in another: an averager of the stage in each,
  // which knows the stage actors of its own process only.
  std::vector<std::vector<std::size_t>> released;
  const std::vector<stage_actor> replicas = recording_replicas(3, released);
  std::vector<std::vector<std::size_t>> here, there;
  const averager_actor first = averager_of({replicas[0], replicas[1], stage_actor{}}, here);
  const averager_actor second = averager_of({stage_actor{}, stage_actor{}, replicas[2]}, there);
  GroupSchedulerConfig config;
  config.stages = {{replicas[0]}, {replicas[1]}, {replicas[2]}};
  config.averagers = {{first, first, second}};
  config.job = job;
  auto scheduler = spawn_group_scheduler(sys, config);
  spawned.push_back(caf::actor_cast<caf::actor>(scheduler));
  // Everyone asks: the window closes at once, on one group of all three.
  for (std::uint64_t p = 0; p < 3; ++p)
    self->send(scheduler, ask_atom::value, std::uint64_t{0}, p, std::uint64_t{1});
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(self).to(scheduler).with(_, 0u, 0u, 1u));
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(self).to(scheduler).with(_, 0u, 1u, 1u));
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(self).to(scheduler).with(_, 0u, 2u, 1u));
  // Each process's averager hears of the group once, and lets its own members go.
  const std::vector<std::uint64_t> all{0, 1, 2}, steps{1, 1, 1};
  expect((average_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(scheduler).to(first).with(_, all, steps));
  expect((average_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(scheduler).to(second).with(_, all, steps));
  sched.run();
  each_process_took_the_group_and_released_its_own(here, there, released);
}

CAF_TEST(an_averager_relay_tells_every_process_averager_of_each_move_in_the_order_it_came) {
  std::vector<std::vector<std::size_t>> first_heard, second_heard;
  const averager_actor first = sys.spawn(averager_double, &first_heard);
  const averager_actor second = sys.spawn(averager_double, &second_heard);
  const averager_actor relay = spawn_averager_relay(sys, {first, second});
  for (const auto& actor : {first, second, relay})
    spawned.push_back(caf::actor_cast<caf::actor>(actor));
  for (const std::uint64_t p : {1, 0, 1})
    self->send(relay, average_atom::value, std::vector<std::uint64_t>{p}, std::vector<std::uint64_t>{2});
  sched.run();
  const std::vector<std::vector<std::size_t>> moves{{1}, {0}, {1}};
  CAF_CHECK_EQUAL(first_heard, moves);
  CAF_CHECK_EQUAL(second_heard, moves);
}

CAF_TEST(a_parameter_server_over_two_processes_has_each_copy_step_on_every_decision_and_answer_its_own) {
  // Pipelines 0 and 1 in one process, 2 in another, each with a copy of the server.
  std::vector<std::vector<std::size_t>> released;
  const std::vector<stage_actor> replicas = recording_replicas(3, released);
  std::vector<std::vector<std::size_t>> here, there; // the pushes each copy stepped on
  const auto copy = [&](std::vector<stage_actor> mine, std::vector<std::vector<std::size_t>>& served) {
    auto made = spawn_server_copy(
        sys, {0, std::move(mine), [&served](const std::vector<std::size_t>& p) { served.push_back(p); }, false});
    spawned.push_back(caf::actor_cast<caf::actor>(made));
    return made;
  };
  const server_copy_actor first = copy({replicas[0], replicas[1], stage_actor{}}, here);
  const server_copy_actor second = copy({stage_actor{}, stage_actor{}, replicas[2]}, there);
  ParameterServerConfig config; // synchronous: a round of every pipeline's push
  config.stages = replicas;
  config.serve = [](const std::vector<std::size_t>&) { throw std::logic_error("the copies serve, not the server"); };
  config.job = job;
  config.detached = false;
  config.copies = {first, second};
  auto server = spawn_parameter_server(sys, config);
  spawned.push_back(caf::actor_cast<caf::actor>(server));
  for (const std::uint64_t p : {2, 0})
    self->send(server, ask_atom::value, std::uint64_t{0}, p, std::uint64_t{4});
  sched.run();
  CAF_CHECK(here.empty() && released.empty()); // pipeline 1 has not pushed
  self->send(server, ask_atom::value, std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4});
  expect((ask_atom, std::uint64_t, std::uint64_t, std::uint64_t), from(self).to(server).with(_, 0u, 1u, 4u));
  const std::vector<std::uint64_t> all{0, 1, 2}, steps{4, 4, 4};
  expect((serve_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(server).to(first).with(_, all, all, steps));
  expect((serve_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(server).to(second).with(_, all, all, steps));
  sched.run();
  each_process_took_the_group_and_released_its_own(here, there, released);
}

CAF_TEST(under_asynchronous_elastic_averaging_a_stage_asks_its_averager_every_period_steps_alone) {
  const std::vector<stage_actor> replicas = averaging_replicas(2, 2);
  std::vector<std::vector<std::size_t>> moved;
  const averager_actor averager = averager_of(replicas, moved);
  for (std::size_t p = 0; p < 2; ++p) {
    self->send(replicas[p], connect_atom::value,
               StageLinks{.pipeline = pipeline, .job = job, .step_end = ElasticAsk{averager}});
  }
  sched.run();
  const auto feed = [&](std::size_t p, std::uint64_t step) {
    self->send(replicas[p], labels_atom::value, step, std::uint64_t{0}, parcel(0), 1.0);
    self->send(replicas[p], forward_atom::value, step, std::uint64_t{0}, parcel(1));
  };
  // Step 1 is a local step only: no snapshot, no ask.
  feed(0, 1);
  sched.run();
  CAF_CHECK(moved.empty());
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p0s0 step"}));
  // Step 2 moves pipeline 0 alone, without waiting for pipeline 1, which has not begun.
  log.clear();
  feed(0, 2);
  expect((labels_atom, std::uint64_t, std::uint64_t, Parcel, double), from(self).to(replicas[0]));
  expect((forward_atom, std::uint64_t, std::uint64_t, Parcel), from(self).to(replicas[0]));
  expect((average_atom, std::vector<std::uint64_t>, std::vector<std::uint64_t>),
         from(replicas[0]).to(averager).with(_, std::vector<std::uint64_t>{0}, std::vector<std::uint64_t>{2}));
  expect((synced_atom, std::uint64_t, bool), from(averager).to(replicas[0]).with(_, 2u, true));
  sched.run();
  CAF_CHECK_EQUAL(moved, (std::vector<std::vector<std::size_t>>{{0}}));
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 B0", "p0s0 step", "p0s0 snapshot", "p0s0 change"}));
  CAF_CHECK(failures.empty());
}

CAF_TEST(the_group_scheduler_never_hands_out_overlapping_groups_and_connects_everyone_within_p_rounds) {
  std::mt19937 random(7);
  for (const std::size_t pipelines : {2, 3, 5, 8, 9, 16})
    for (const std::size_t force_every : {2, 3, 10}) {
      CAF_MESSAGE(pipelines << " pipelines, a forced round every " << force_every << " asks");
      std::vector<std::vector<std::size_t>> released;
      GroupSchedulerConfig config;
      config.scheduling.force_every = force_every;
      config.job = job;
      for (std::size_t p = 0; p < pipelines; ++p) {
        config.stages.push_back({sys.spawn(scheduled_stage_double, std::uint64_t{p}, &released)});
        spawned.push_back(caf::actor_cast<caf::actor>(config.stages.back().front()));
      }
      const averager_actor averager = sys.spawn(averager_double, &released);
      config.averagers = {std::vector<averager_actor>(pipelines, averager)};
      spawned.push_back(caf::actor_cast<caf::actor>(averager));
      auto scheduler = spawn_group_scheduler(sys, config);
      spawned.push_back(caf::actor_cast<caf::actor>(scheduler));
      // Each pipeline computes for 1–5 ms between asks, a tenth of the time 20 ms more.
      using namespace std::chrono;
      auto& clock = sched.clock();
      std::uniform_int_distribution<int> compute(1000, 5000);
      std::uniform_real_distribution<double> coin(0, 1);
      std::vector<caf::actor_clock::time_point> next(pipelines);
      for (auto& t : next)
        t = clock.now() + microseconds(compute(random));
      std::vector<bool> waiting(pipelines, false);
      std::vector<std::uint64_t> asks(pipelines, 0);
      Connectivity connectivity(pipelines);
      // Each pipeline's rounds (asks let go) since every pipeline was last connected.
      std::vector<std::size_t> since_connected(pipelines, 0);
      std::size_t rounds = 0, longest = 0, groups_of_many = 0;
      while (rounds < 300) {
        // The next event: a pipeline asking, or the scheduler's timer.
        auto event = caf::actor_clock::time_point::max();
        for (std::size_t q = 0; q < pipelines; ++q)
          if (!waiting[q]) event = std::min(event, next[q]);
        if (!clock.schedule().empty()) event = std::min(event, clock.schedule().begin()->first);
        CAF_REQUIRE(event != caf::actor_clock::time_point::max());           // no deadlock
        clock.advance_time(std::max(caf::timespan{0}, event - clock.now())); // fires the timers due

        for (std::size_t q = 0; q < pipelines; ++q)
          if (!waiting[q] && next[q] <= clock.now()) {
            self->send(scheduler, ask_atom::value, std::uint64_t{0}, std::uint64_t{q}, ++asks[q]);
            waiting[q] = true;
          }
        released.clear();
        sched.run();
        std::set<std::size_t> let_go;
        for (const auto& group : released) {
          CAF_CHECK(!group.empty());
          for (const std::size_t q : group) {
            CAF_CHECK(waiting[q]);
            CAF_CHECK(let_go.insert(q).second); // in one group only
            waiting[q] = false;
            next[q] = clock.now() + microseconds(compute(random) + (coin(random) < 0.1 ? 20000 : 0));
            longest = std::max(longest, ++since_connected[q]);
          }
          groups_of_many += group.size() > 1 ? 1 : 0;
          connectivity.add(group);
        }
        rounds += released.empty() ? 0 : 1;
        if (connectivity.connected()) {
          connectivity = Connectivity(pipelines);
          since_connected.assign(pipelines, 0);
        }
        for (std::size_t q = 0; q < pipelines; ++q)
          CAF_REQUIRE_LESS(since_connected[q], force_every);
      }
      CAF_CHECK_LESS_OR_EQUAL(longest, force_every); // at the latest, the P-th round connects them
      CAF_CHECK_GREATER(groups_of_many, 0u);
      CAF_CHECK(failures.empty());
    }
}

CAF_TEST(only_a_parcels_ticket_crosses_processes) {
  // A remote parcel is its ticket on the wire, and comes out remote, with no payload.
  Parcel remote;
  remote.ticket = {3, 41, 6, {2, 5}};
  remote.remote = true;
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  CAF_REQUIRE(!sink(remote));
  Parcel arrived;
  arrived.payload = value(1);
  caf::binary_deserializer source{nullptr, bytes};
  CAF_REQUIRE(!source(arrived));
  CAF_CHECK(arrived.remote);
  CAF_CHECK(arrived.payload == nullptr);
  CAF_CHECK_EQUAL(arrived.ticket.from, 3u);
  CAF_CHECK_EQUAL(arrived.ticket.tag, 41u);
  CAF_CHECK_EQUAL(arrived.ticket.dtype, 6);
  CAF_CHECK_EQUAL(arrived.ticket.shape, (std::vector<std::int64_t>{2, 5}));
  // A pointer never leaves its process.
  std::vector<char> refused;
  caf::binary_serializer local_sink{nullptr, refused};
  CAF_CHECK(local_sink(parcel(1)) == caf::sec::invalid_argument);
}

CAF_TEST(a_pipeline_sent_which_rows_its_share_is_makes_them_and_feeds_its_stages_their_micro_batches) {
  // As in a worker: its share comes as rows (as over the wire), its stages get pointers.
  const Schedule gpipe = gpipe_schedule(2, {1, 1});
  auto first = stage(0, 0, gpipe);
  auto last = stage(0, 1, gpipe);
  std::vector<train::BatchRows> made;
  PipelineConfig config;
  config.stages = {first, last};
  config.micro_batch_sizes = {1, 1};
  config.batch_size = 4;
  // Row r of the data is r, its label r + 100.
  config.make_rows = [&made](const train::BatchRows& rows) -> train::Payload {
    made.push_back(rows);
    const auto first = static_cast<double>(rows.first);
    return train::wrap(torch::arange(first, first + rows.count, torch::kFloat64).view({-1, 1}) +
                       (rows.labels ? 100 : 0));
  };
  pipeline_actor pipeline = real_pipeline(config);
  const auto as_rows = [](bool labels) {
    Parcel rows;
    rows.remote = true;
    rows.by_rows = true;
    rows.rows = {2, 5, 10, 2, labels};
    return rows;
  };
  self->send(pipeline, step_atom::value, std::uint64_t{1}, as_rows(false), as_rows(true));
  run();
  CAF_REQUIRE_EQUAL(made.size(), 2u);
  CAF_CHECK(made[0] == (train::BatchRows{2, 5, 10, 2, false}));
  CAF_CHECK(made[1] == (train::BatchRows{2, 5, 10, 2, true}));
  // Micro-batch m is row 10 + m, through both stages.
  for (std::size_t m = 0; m < 2; ++m)
    for (std::size_t s = 0; s < 2; ++s) {
      CAF_REQUIRE(fake(0, s).seen.count(m));
      CAF_CHECK_EQUAL(fake(0, s).seen[m]->tensor.item<double>(), 10.0 + m);
    }
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s0 F1", "p0s1 F0", "p0s1 F1", "p0s1 B0", "p0s1 B1",
                                                 "p0s1 step", "p0s0 B0", "p0s0 B1", "p0s0 step"}));
  CAF_CHECK(failures.empty());
}

CAF_TEST(under_clipping_every_stage_steps_by_the_norm_of_the_whole_models_gradient_once_all_have_said_theirs) {
  const Schedule gpipe = gpipe_schedule(2, {1});
  auto first = stage(0, 0, gpipe, nullptr, true);
  auto last = stage(0, 1, gpipe, nullptr, true);
  fake(0, 0).square_sum = 9;  // its gradients' part: 3²
  fake(0, 1).square_sum = 16; // 4²
  PipelineConfig config;
  config.stages = {first, last};
  config.micro_batch_sizes = {1};
  config.batch_size = 1;
  pipeline_actor pipeline = real_pipeline(config);
  self->send(pipeline, step_atom::value, std::uint64_t{1}, pack(value(1)), pack(value(0)));
  run();
  // The last stage is done first and says its part, but steps only once the first
  // stage's part is in: then both step by the norm of both, √(9 + 16).
  CAF_CHECK_EQUAL(log, (std::vector<std::string>{"p0s0 F0", "p0s1 F0", "p0s1 B0", "p0s1 norm", "p0s0 B0", "p0s0 norm",
                                                 "p0s0 step", "p0s1 step"}));
  for (std::size_t s = 0; s < 2; ++s) {
    CAF_REQUIRE(fake(0, s).stepped_norm.has_value());
    CAF_CHECK_EQUAL(*fake(0, s).stepped_norm, 5.0);
  }
  CAF_CHECK(failures.empty());
  // A norm for a step that asked for none fails the stage, by name.
  self->send(first, norm_atom::value, std::uint64_t{7}, 1.0);
  run();
  CAF_REQUIRE_EQUAL(failures.size(), 1u);
  CAF_CHECK_EQUAL(failures[0], "stage 0 of pipeline 0, gradient norm in step 2: its pipeline said the norm of step 7, "
                               "which is not waiting for one");
}

CAF_TEST(a_pipeline_without_rows_to_make_them_from_refuses_the_step) {
  PipelineConfig config;
  config.stages = {stage(0, 0, gpipe_schedule(1, {1}))};
  config.micro_batch_sizes = {1};
  config.batch_size = 1;
  pipeline_actor pipeline = spawn_pipeline(sys, config);
  spawned.push_back(caf::actor_cast<caf::actor>(pipeline));
  Parcel rows;
  rows.remote = true;
  rows.by_rows = true;
  rows.rows = {0, 0, 0, 1, false};
  std::optional<std::string> refused;
  auto answer = self->request(pipeline, caf::infinite, step_atom::value, std::uint64_t{1}, rows, rows);
  run();
  answer.receive([](double) {}, [&](caf::error& e) { refused = sys.render(e); });
  CAF_REQUIRE(refused.has_value());
  CAF_CHECK(refused->find("making its share of a batch") != std::string::npos);
  CAF_CHECK(log.empty());
}

CAF_TEST(a_tensor_from_another_process_without_a_transport_fails_the_stage_by_name) {
  const Schedule one = gpipe_schedule(1, {1});
  auto only = stage(0, 0, one);
  connect({only});
  Parcel remote;
  remote.ticket = {2, 0, 6, {1, 1}};
  remote.remote = true;
  inject((forward_atom, std::uint64_t, std::uint64_t, Parcel),
         from(self).to(only).with(forward_atom::value, std::uint64_t{1}, std::uint64_t{0}, remote));
  expect((failed_atom, std::string), from(only).to(job));
  CAF_REQUIRE_EQUAL(failures.size(), 1u);
  CAF_CHECK(failures.front().find("taking in an input of micro-batch 0") != std::string::npos);
  CAF_CHECK(failures.front().find("from rank 2") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

/// Who was dealt what: "p<pipeline> <step>.<part>", "+" where the pipeline held none.
std::vector<std::string> dealt(std::vector<ShareDealer::Dealt> shares) {
  std::vector<std::string> out;
  for (const auto& d : shares)
    out.push_back("p" + std::to_string(d.pipeline) + " " + std::to_string(d.share.step) + "." +
                  std::to_string(d.share.part) + (d.had_none ? "+" : ""));
  return out;
}

/// Queues step `step`'s shares for `pipelines` pipelines.
void add_step(ShareDealer& dealer, std::uint64_t step, std::size_t pipelines) {
  for (std::size_t part = 0; part < pipelines; ++part)
    dealer.add(Share{step, part, nullptr, nullptr});
}

using Dealing = std::vector<std::string>;

} // namespace

CAF_TEST(a_lockstep_dealer_gives_pipeline_p_share_p_of_every_step_at_once) {
  ShareDealer dealer(3, ShareDealer::Order::in_turn);
  add_step(dealer, 1, 3);
  add_step(dealer, 2, 3);
  CAF_CHECK_EQUAL(dealt(dealer.deal()), (Dealing{"p0 1.0+", "p1 1.1+", "p2 1.2+", "p0 2.0", "p1 2.1", "p2 2.2"}));
  CAF_CHECK_EQUAL(dealer.in_hand(1), 2u);
}

CAF_TEST(the_least_busy_take_shares_at_their_own_pace_while_in_turn_keeps_share_p_on_pipeline_p) {
  // Two pipelines, two shares each in hand at most. Pipeline 0 is done with two shares
  // before pipeline 1's first done is heard (a message from another process late).
  const auto play = [](ShareDealer::Order order) {
    ShareDealer dealer(2, order, 2);
    std::vector<Dealing> rounds;
    add_step(dealer, 1, 2);
    add_step(dealer, 2, 2);
    add_step(dealer, 3, 2);
    rounds.push_back(dealt(dealer.deal()));
    dealer.done(0);
    rounds.push_back(dealt(dealer.deal()));
    dealer.done(0);
    rounds.push_back(dealt(dealer.deal()));
    dealer.done(1);
    rounds.push_back(dealt(dealer.deal()));
    return rounds;
  };
  // The least busy: pipeline 0, the first with room, takes step 3's share 1 too.
  CAF_CHECK_EQUAL(play(ShareDealer::Order::least_busy),
                  (std::vector<Dealing>{{"p0 1.0+", "p1 1.1+", "p0 2.0", "p1 2.1"}, {"p0 3.0"}, {"p0 3.1"}, {}}));
  // In turn: share 1 waits for pipeline 1, as where every round waits for every
  // pipeline (it could not be computed sooner).
  CAF_CHECK_EQUAL(play(ShareDealer::Order::in_turn),
                  (std::vector<Dealing>{{"p0 1.0+", "p1 1.1+", "p0 2.0", "p1 2.1"}, {"p0 3.0"}, {}, {"p1 3.1"}}));
}

CAF_TEST(a_pipeline_done_with_everything_it_held_is_dealt_its_next_share_as_one_that_held_none) {
  ShareDealer dealer(2, ShareDealer::Order::least_busy, 2);
  add_step(dealer, 1, 2);
  CAF_CHECK_EQUAL(dealt(dealer.deal()), (Dealing{"p0 1.0+", "p1 1.1+"}));
  dealer.done(1);
  CAF_CHECK_EQUAL(dealer.in_hand(1), 0u);
  add_step(dealer, 2, 2);
  // Pipeline 1 holds none: it goes first, and its scheduler is to hear it has work.
  CAF_CHECK_EQUAL(dealt(dealer.deal()), (Dealing{"p1 2.0+", "p0 2.1"}));
  // A run that failed drops what is queued.
  add_step(dealer, 3, 2);
  add_step(dealer, 4, 2);
  CAF_CHECK_EQUAL(dealt(dealer.deal()), (Dealing{"p1 3.0"}));
  dealer.drop_queued();
  dealer.done(0);
  CAF_CHECK(dealer.deal().empty());
}

CAF_TEST(shares_go_in_turn_where_every_round_waits_for_every_pipeline_and_to_the_least_busy_elsewhere) {
  const auto order_of = [](const std::function<void(JobConfig&)>& policy) {
    JobConfig config;
    policy(config);
    const ShareDealer dealer = share_dealer(config, 4);
    return std::pair{dealer.order(), dealer.most_in_hand()};
  };
  using Order = ShareDealer::Order;
  CAF_CHECK(order_of([](JobConfig&) {}) == std::pair{Order::in_turn, ShareDealer::unbounded});
  CAF_CHECK(order_of([](JobConfig& c) { c.mode = ScheduledAveraging{}; }) ==
            std::pair{Order::least_busy, std::size_t{2}});
  CAF_CHECK(order_of([](JobConfig& c) {
              GroupScheduling every_round;
              every_round.force_every = 1;
              c.mode = ScheduledAveraging{every_round};
            }) == std::pair{Order::in_turn, std::size_t{2}});
  CAF_CHECK(order_of([](JobConfig& c) { c.mode = ParameterServer{0}; }) == std::pair{Order::in_turn, std::size_t{2}});
  CAF_CHECK(order_of([](JobConfig& c) { c.mode = ParameterServer{3}; }) ==
            std::pair{Order::least_busy, std::size_t{2}});
  CAF_CHECK(order_of([](JobConfig& c) { c.mode = ElasticAveraging{1}; }) ==
            std::pair{Order::least_busy, std::size_t{2}});
}

CAF_TEST(a_process_binds_its_own_stages_among_its_cores_numbered_among_themselves) {
  JobConfig config; // stage threads of their own, bound where they outnumber the cores
  config.plan.pipelines = 2;
  config.plan.stages.resize(2);
  const std::vector<int> two{4, 6};
  // One process with all four: pipeline neighbours share a core.
  const auto all = stage_cores(config, launch::Topology::one_process(2, 2), 0, two);
  CAF_CHECK(all == (std::vector<std::vector<std::optional<int>>>{{4, 4}, {6, 6}}));
  // A worker with pipeline 1's two stages on two cores: a core each, placed by the
  // system; on one core, both there. The others are not its to bind.
  const launch::Topology split({{1, 1}, {2, 2}});
  const std::optional<int> none;
  CAF_CHECK(stage_cores(config, split, 2, two) ==
            (std::vector<std::vector<std::optional<int>>>{{none, none}, {none, none}}));
  CAF_CHECK(stage_cores(config, split, 2, {6}) == (std::vector<std::vector<std::optional<int>>>{{none, none}, {6, 6}}));
  config.pin_threads = false;
  CAF_CHECK(stage_cores(config, split, 2, {6}) ==
            (std::vector<std::vector<std::optional<int>>>{{none, none}, {none, none}}));
}
