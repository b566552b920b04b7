// Runs of several processes: `actorpipe launch` against one process (the same
// parameters), the coordinator's gate refusing a worker without the job's token, and
// lost workers: killed or hung, reported, and restarted.
#define BOOST_TEST_MODULE processes
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "reference_training.hpp"
#include "test_support.hpp"

#include <actorpipe/profile_io.hpp>

#include "coordinator.hpp"
#include "process_protocol.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <mutex>
#include <sys/stat.h>
#include <sstream>

using namespace actorpipe;
using test::contains;

namespace {

/// A job of 2 stages × 2 pipelines on four CPU "devices", its profile measured and
/// written beside it, so that every process plans it alike.
std::string job_file(const test::ScratchDir& dir, const std::string& scheduler, const std::string& profile = "") {
  std::ostringstream t;
  t << "[job]\nname = \"processes\"\nseed = 3\n[model]\nzoo = \"mlp\"\nlayers = 3\nwidth = 32\n"
    << (profile.empty() ? "" : "profile = \"" + profile + "\"\n")
    << "[data]\ndataset = \"synthetic\"\nsamples = 512\nshape = [12]\nclasses = 5\n"
    << "[train]\nbatch_size = 16\noptimizer = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n"
    << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"" << scheduler << "\"\n"
    << "stages = 2\npipelines = 2\nmicro_batches = 4\n";
  const std::string cluster = test::cpu_cluster_toml(4, "4 GiB");
  if (!profile.empty()) return dir.write(scheduler + ".toml", cluster + t.str());
  const test::MeasuredPlan measured = test::quick_plan(dir, cluster + t.str());
  const std::string measured_profile = (dir.path() / "profile.toml").string();
  REQUIRE_OK(save_profile(measured.job.profile, measured_profile));
  return job_file(dir, scheduler, measured_profile);
}

} // namespace

BOOST_AUTO_TEST_CASE(launched_workers_train_as_one_process_does) {
  test::ScratchDir dir;
  for (const char* scheduler : {"gpipe", "1f1b"}) {
    const std::string job = job_file(dir, scheduler);
    auto loaded = load_job(job);
    REQUIRE_OK(loaded);
    const auto reference = test::single_process(*loaded, 10);
    for (const int processes : {2, 4})
      BOOST_TEST_CONTEXT(scheduler << ", " << processes << " worker processes") {
        const std::string out = (dir.path() / ("run-" + std::string(scheduler) + std::to_string(processes))).string();
        const auto run =
            test::run_cli("launch --nprocs " + std::to_string(processes) + " " + job + " --steps 10 -o " + out);
        BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
        BOOST_TEST(contains(run.err, "starting " + std::to_string(processes) + " workers"));
        BOOST_TEST(contains(run.out, "trained 10 steps"));
        BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2), reference) < 1e-5);
      }
  }
}

BOOST_AUTO_TEST_CASE(a_worker_with_a_wrong_token_is_refused_and_logged_with_its_address) {
  caf::actor_system_config coordinator_config, worker_config;
  for (auto* config : {&coordinator_config, &worker_config}) {
    config->load<caf::io::middleman>();
    actors::add_process_message_types(*config);
  }
  caf::actor_system coordinator{coordinator_config}, worker{worker_config};
  std::mutex mutex;
  std::vector<std::string> log;
  actors::GateConfig gate_config;
  gate_config.token = "the-right-token";
  gate_config.order.job_file = "job.toml";
  gate_config.workers = 1;
  gate_config.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    log.push_back(line);
  };
  auto gate = actors::spawn_gate(coordinator, gate_config);
  auto port = coordinator.middleman().publish(gate, 0, "127.0.0.1");
  BOOST_REQUIRE(static_cast<bool>(port));
  auto remote = worker.middleman().remote_actor<actors::gate_actor>("127.0.0.1", *port);
  BOOST_REQUIRE(static_cast<bool>(remote));
  caf::scoped_actor self{worker};
  const auto join = [&](const std::string& token) {
    std::optional<actors::JobOrder> order;
    std::string refused;
    self->request(*remote, std::chrono::seconds(30), actors::join_atom::value, token, std::string("rogue"))
        .receive([&](actors::JobOrder& o) { order = std::move(o); },
                 [&](caf::error& e) { refused = worker.render(e); });
    return std::make_pair(order, refused);
  };
  // A worker process with another token: refused, and the gate logs where it came from.
  test::ScratchDir dir;
  const std::string wrong = dir.write("token", "a-wrong-token\n");
  ::chmod(wrong.c_str(), 0600);
  const auto refused =
      test::run_cli("worker --coordinator 127.0.0.1:" + std::to_string(*port) + " --token-file " + wrong);
  BOOST_TEST(refused.status == 2);
  BOOST_TEST(contains(refused.err, "refused this worker"), refused.err);
  BOOST_TEST(contains(refused.err, "wrong token"), refused.err);
  {
    std::lock_guard<std::mutex> lock(mutex);
    BOOST_REQUIRE_EQUAL(log.size(), 1u);
    BOOST_TEST(contains(log[0], "refused a worker from 127.0.0.1:"), log[0]);
    BOOST_TEST(contains(log[0], "pid"), log[0]); // its host name and process
  }
  // The token gets the order, with a rank; the run's workers all come, no more.
  const auto [order, none] = join("the-right-token");
  BOOST_REQUIRE(order.has_value());
  BOOST_TEST(order->rank == 1u);
  BOOST_TEST(order->job_file == "job.toml");
  const auto [extra, full] = join("the-right-token");
  BOOST_TEST(!extra.has_value());
  BOOST_TEST(contains(full, "all its 1 workers"));
  caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_lost_worker_ends_the_run_naming_its_stage_process_and_the_last_step) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  // Stage 1's worker processes end at once as they start step 4, as killed ones would.
  const auto run = test::run_cli("launch --nprocs 2 " + job + " --steps 10 -o " + (dir.path() / "run").string() +
                                 " --inject-failure 1:4:exit");
  BOOST_TEST(run.status == 1, run.err);
  BOOST_TEST(contains(run.err, "of pipeline"), run.err);
  BOOST_TEST(contains(run.err, "(worker process "), run.err);
  const std::string mark = "the last completed step is ";
  const auto at = run.err.find(mark);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, run.err);
  // Step 3's answer may or may not have left a worker before it ended.
  const int last = std::atoi(run.err.c_str() + at + mark.size());
  BOOST_TEST((last == 2 || last == 3), run.err);
  BOOST_TEST(!contains(run.out, "trained"));
}

BOOST_AUTO_TEST_CASE(a_killed_worker_is_restarted_and_the_run_resumed_from_its_last_checkpoint) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  // 32 steps an epoch, a checkpoint after each: the worker lost in step 40 costs steps
  // 33 to 39, which the restarted workers take again from the checkpoint of step 32.
  const std::string out = (dir.path() / "run").string();
  const auto run =
      test::run_cli("launch --nprocs 2 " + job + " --epochs 3 -o " + out + " --inject-failure 1:40:exit --restart 1");
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  BOOST_TEST(contains(run.err, "(worker process "), run.err);
  BOOST_TEST(contains(run.err, "restart 1 of 1: starting the workers again, resuming from the checkpoint in " + out),
             run.err);
  BOOST_TEST(contains(run.out, "trained 96 steps"), run.out);
  // The workers took the checkpoint's state: the run ends where one never interrupted does.
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2),
                                       test::single_process(*loaded, 96)) < 1e-5);
}

BOOST_AUTO_TEST_CASE(a_hung_worker_is_found_by_its_silence_and_named_with_its_stages) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "gpipe");
  // Stage 1's worker processes stop (SIGSTOP) as they start step 4: their connections
  // stay open, and only the heartbeats tell.
  const auto run = test::run_cli("launch --nprocs 2 " + job + " --steps 10 -o " + (dir.path() / "run").string() +
                                 " --inject-failure 1:4:hang --heartbeat-timeout 1");
  BOOST_TEST(run.status == 1, run.err);
  BOOST_TEST(contains(run.err, "did not answer a heartbeat within 1 s"), run.err);
  BOOST_TEST(contains(run.err, "stage 1 of pipeline "), run.err);
  BOOST_TEST(contains(run.err, "the last completed step is "), run.err);
  BOOST_TEST(!contains(run.out, "trained"));
}

BOOST_AUTO_TEST_CASE(bad_launch_and_worker_flags_are_named_with_exit_status_2) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "gpipe");
  const std::string out = " -o " + (dir.path() / "run").string();
  const auto listen = test::run_cli("launch --nprocs 2 " + job + " --listen nowhere" + out);
  BOOST_TEST(listen.status == 2);
  BOOST_TEST(contains(listen.err, "--listen: 'nowhere' has no port"), listen.err);
  const auto too_many = test::run_cli("launch --nprocs 9 " + job + out);
  BOOST_TEST(too_many.status == 2);
  BOOST_TEST(contains(too_many.err, "9 worker processes for a plan on 4 devices"), too_many.err);
  // Ending a process is for workers only.
  const auto exit_here = test::run_cli("run " + job + " --inject-failure 0:1:exit" + out);
  BOOST_TEST(exit_here.status == 2);
  BOOST_TEST(contains(exit_here.err, "found '0:1:exit'"), exit_here.err);
  const auto hang_here = test::run_cli("run " + job + " --inject-failure 0:1:hang" + out);
  BOOST_TEST(hang_here.status == 2);
  BOOST_TEST(contains(hang_here.err, "found '0:1:hang'"), hang_here.err);
  const auto no_time = test::run_cli("launch --nprocs 2 " + job + " --heartbeat-timeout 0" + out);
  BOOST_TEST(no_time.status == 2);
  BOOST_TEST(contains(no_time.err, "--heartbeat-timeout"), no_time.err);
  const auto nowhere = test::run_cli("worker --token-file " + dir.write("t", "x"));
  BOOST_TEST(nowhere.status == 2);
  BOOST_TEST(contains(nowhere.err, "no coordinator: give --coordinator HOST:PORT"), nowhere.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run"));
}
