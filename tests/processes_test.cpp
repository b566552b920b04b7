// Runs of several processes: `actorpipe launch` against one process (the same
// parameters), the coordinator's gate refusing a worker without the job's token, and
// lost workers: killed or hung, reported, and restarted.
#define BOOST_TEST_MODULE processes
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "reference_training.hpp"
#include "test_support.hpp"

#include <actorpipe/profile_io.hpp>

#include "base/input_file.hpp"
#include "base/sha256.hpp"
#include "launch/core_list.hpp"
#include "launch/process_place.hpp"
#include "planner/plan_wire.hpp"
#include "processes/control_channel.hpp"
#include "processes/coordinator.hpp"
#include "processes/process_protocol.hpp"
#include "run/run_setup.hpp"
#include "train/cores.hpp"
#include "train/replica_sync.hpp"
#include "train/session.hpp"
#include "train/stage_worker.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/sync_executor.hpp"
#include "train/tensor_box.hpp"
#include "transport/tensor_transport.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <mutex>
#include <numeric>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <variant>

using namespace actorpipe;
using test::contains;

namespace {

/// Shuts a gate down however its test ends: a failed check throws, and the actor
/// system would otherwise wait for the gate for good instead of the test failing.
struct GateEndsWithTest {
  actors::gate_actor gate;
  ~GateEndsWithTest() { caf::anon_send_exit(gate, caf::exit_reason::user_shutdown); }
};

/// A job of 2 stages × 2 pipelines on four CPU "devices", its profile measured and
/// written beside it, so that every process plans it alike.
std::string job_file(const test::ScratchDir& dir, const std::string& scheduler, const std::string& profile = "",
                     const std::string& more_train = "") {
  std::ostringstream t;
  t << "[job]\nname = \"processes\"\nseed = 3\n[model]\nzoo = \"mlp\"\nlayers = 3\nwidth = 32\n"
    << (profile.empty() ? "" : "profile = \"" + profile + "\"\n")
    << "[data]\ndataset = \"synthetic\"\nsamples = 512\nshape = [12]\nclasses = 5\n"
    << "[train]\nbatch_size = 16\noptimizer = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n"
    << more_train << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"" << scheduler << "\"\n"
    << "stages = 2\npipelines = 2\nmicro_batches = 4\n";
  const std::string cluster = test::cpu_cluster_toml(4, "4 GiB");
  if (!profile.empty()) return dir.write(scheduler + ".toml", cluster + t.str());
  const test::MeasuredPlan measured = test::quick_plan(dir, cluster + t.str());
  const std::string measured_profile = (dir.path() / "profile.toml").string();
  REQUIRE_OK(save_profile(measured.job.profile, measured_profile));
  return job_file(dir, scheduler, measured_profile, more_train);
}

/// A file's text; empty where there is none.
std::string text_of(const std::string& path) {
  auto text = read_file(path);
  return text ? *text : std::string();
}

/// The processes of a run's trace.json that have spans, by name.
std::set<std::string> traced_processes(const std::string& path) {
  const auto trace = nlohmann::json::parse(text_of(path));
  std::map<std::uint64_t, std::string> names;
  std::set<std::uint64_t> spanned;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") names[event["pid"]] = event["args"]["name"];
    if (event["ph"] == "X") spanned.insert(event["pid"].get<std::uint64_t>());
  }
  std::set<std::string> found;
  for (const std::uint64_t pid : spanned)
    found.insert(names[pid]);
  return found;
}

/// The cores each worker of a launch said it is bound to, from the launch's stderr.
std::vector<std::vector<int>> bound_cores(const std::string& err) {
  std::vector<std::vector<int>> shares;
  const std::regex said("bound to cores ([0-9,-]+)");
  for (std::sregex_iterator it(err.begin(), err.end(), said), end; it != end; ++it) {
    auto cores = launch::parse_core_list((*it)[1].str(), "the worker's line");
    BOOST_REQUIRE_MESSAGE(cores.ok(), err);
    shares.push_back(*cores);
  }
  return shares;
}

/// Where a launch wrote its output, and what it said on stderr.
struct Launched {
  std::string out, err;
};

/// `job` run by `launch --nprocs N` for `steps` steps, into a folder of `dir` named
/// after `name` and N; a failed run fails the test case.
Launched launched(const test::ScratchDir& dir, const std::string& job, const std::string& name, int processes,
                  int steps, bool follows_others = false) {
  const std::string out = (dir.path() / (name + std::to_string(processes))).string();
  const auto run = test::run_cli("launch --nprocs " + std::to_string(processes) + " " + job + " --steps " +
                                 std::to_string(steps) + " -o " + out);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  // Each worker says where Gloo's loop runs, in a line of its own.
  for (int rank = 1; rank <= processes; ++rank) {
    const std::string ready = "actorpipe worker: rank " + std::to_string(rank) + " ready (Gloo's loop ";
    BOOST_TEST((contains(run.err, ready + "as any thread)\n") ||
                (!follows_others && contains(run.err, ready + "on cores its stages leave idle)\n"))),
               run.err);
  }
  return {out, run.err};
}

/// What each of a launch's `processes` workers said it runs (its stderr `err`). With 2
/// workers each runs whole pipelines, their pipeline actors too: the job sends each a
/// step's share as rows, once. With 4 and a job of 2 pipelines, each runs a stage and
/// the job the pipelines.
void workers_say_what_they_run(const std::string& err, int processes) {
  for (int rank = 1; rank <= processes; ++rank) {
    const std::regex said("actorpipe worker: rank " + std::to_string(rank) + " runs ([^\n]*)\n");
    std::smatch line;
    BOOST_TEST_REQUIRE(std::regex_search(err, line, said), err);
    if (processes == 2)
      BOOST_TEST(std::regex_match(line[1].str(), std::regex("pipelines? [0-9, ]+ with (its|their) pipeline actors?")),
                 line[1]);
    if (processes == 4 && contains(err, "2 stages × 2 pipelines"))
      BOOST_TEST(std::regex_match(line[1].str(), std::regex("stage [01] of pipeline [01]")), line[1]);
  }
}

/// `job` (2 stages) for 10 steps under `actorpipe run`, then under `launch` with 2 and
/// 4 workers: the checkpoints' parameters agree to 1e-5. `name` keeps the runs' folders
/// apart.
void launches_train_as_one_process(const test::ScratchDir& dir, const std::string& job, const std::string& name) {
  const std::string one = (dir.path() / ("one-" + name)).string();
  const auto reference = test::run_cli("run " + job + " --steps 10 -o " + one);
  BOOST_REQUIRE_MESSAGE(reference.status == 0, reference.err);
  for (const int processes : {2, 4})
    BOOST_TEST_CONTEXT(processes << " worker processes") {
      const Launched run = launched(dir, job, name, processes, 10);
      BOOST_TEST(test::relative_difference(test::checkpoint_parameters(run.out + "/checkpoint.pt", 2),
                                           test::checkpoint_parameters(one + "/checkpoint.pt", 2)) < 1e-5);
      workers_say_what_they_run(run.err, processes);
    }
}

/// `launch --nprocs 2` and `4` of `job` for a policy whose result depends on timing
/// (pipelines stepping on their own): each run ends, and its loss falls. Where every
/// worker `follows_others` (asynchronous elastic averaging, a parameter server that
/// steps on each push), each says that its Gloo loop runs as any thread.
void launches_and_trains(const test::ScratchDir& dir, const std::string& job, const std::string& name,
                         bool follows_others = false) {
  for (const int processes : {2, 4})
    BOOST_TEST_CONTEXT(processes << " worker processes") {
      const std::string out = launched(dir, job, name, processes, 60, follows_others).out;
      std::vector<double> losses;
      std::ifstream metrics(out + "/metrics.jsonl");
      for (std::string line; std::getline(metrics, line);)
        if (const auto m = nlohmann::json::parse(line); m.value("kind", "") == "step") losses.push_back(m["loss"]);
      BOOST_REQUIRE_EQUAL(losses.size(), 60u);
      const auto mean = [&](std::size_t from) { return std::accumulate(&losses[from], &losses[from] + 10, 0.0) / 10; };
      BOOST_TEST(mean(50) < mean(0));
    }
}

/// Whether this process may make network namespaces (root, with iproute2's `ip` and
/// `tc`): the test of two servers needs them and is skipped elsewhere.
boost::test_tools::assertion_result can_make_namespaces(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(false);
  if (::geteuid() != 0) {
    result.message() << "not root: network namespaces need it";
    return result;
  }
  const std::string probe = "ap" + std::to_string(::getpid()) + "p";
  if (std::system(
          ("command -v tc >/dev/null && ip netns add " + probe + " 2>/dev/null && ip netns del " + probe).c_str()) !=
      0) {
    result.message() << "iproute2's ip netns and tc are missing or not allowed here";
    return result;
  }
  return true;
}

/// Two servers on one machine: network namespaces joined by a veth pair whose every
/// packet passes a tc token bucket (100 Mbit/s each way), at 10.231.7.1 and .2. Gone
/// with the object.
class TwoServers {
public:
  TwoServers() : a_("ap" + std::to_string(::getpid()) + "a"), b_("ap" + std::to_string(::getpid()) + "b") {
    std::string script = "set -e; ip netns add " + a_ + "; ip netns add " + b_ + "; ip link add " + a_ +
                         "0 type veth peer name " + b_ + "0; ";
    for (const auto& [name, address] : {std::pair{a_, "10.231.7.1"}, std::pair{b_, "10.231.7.2"}})
      script += "ip link set " + name + "0 netns " + name + "; ip -n " + name + " addr add " + address + "/24 dev " +
                name + "0; ip -n " + name + " link set lo up; ip -n " + name + " link set " + name + "0 up; tc -n " +
                name + " qdisc add dev " + name + "0 root tbf rate 100mbit burst 32kb latency 50ms; ";
    made_ = std::system(script.c_str()) == 0;
  }
  ~TwoServers() {
    // Whatever is left of them goes; nothing to do where nothing was made.
    if (std::system(("ip netns del " + a_ + " 2>/dev/null; ip netns del " + b_ + " 2>/dev/null").c_str()) != 0) return;
  }
  bool made() const { return made_; }
  /// `command` run in server a's namespace or b's.
  std::string in_a(const std::string& command) const { return "ip netns exec " + a_ + " " + command; }
  std::string in_b(const std::string& command) const { return "ip netns exec " + b_ + " " + command; }
  /// Bytes server a sent over the link, as its token bucket counted them.
  long sent_by_a() const {
    std::string text;
    if (FILE* tc = ::popen(("tc -n " + a_ + " -s qdisc show dev " + a_ + "0").c_str(), "r")) {
      char buffer[4096];
      for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, tc)) > 0;)
        text.append(buffer, n);
      ::pclose(tc);
    }
    std::smatch sent;
    return std::regex_search(text, sent, std::regex("Sent ([0-9]+) bytes")) ? std::stol(sent[1]) : -1;
  }

private:
  std::string a_, b_;
  bool made_ = false;
};

/// A socket listening on a free loopback port, whose "127.0.0.1:PORT" goes to `where`;
/// the kernel completes connections to it whether or not anyone accepts them.
int loopback_listener(std::string& where) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof any;
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0);
  BOOST_REQUIRE(::listen(fd, 8) == 0);
  BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&any), &size) == 0);
  where = "127.0.0.1:" + std::to_string(ntohs(any.sin_port));
  return fd;
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
        workers_say_what_they_run(run.err, processes);
        // One trace, a process track per worker, each with its stages' spans.
        std::set<std::string> workers;
        for (int rank = 1; rank <= processes; ++rank)
          workers.insert("worker process " + std::to_string(rank));
        BOOST_TEST(traced_processes(out + "/trace.json") == workers, boost::test_tools::per_element());
        // Each worker on cores of its own while there are enough to go round.
        const std::vector<std::vector<int>> shares = bound_cores(run.err);
        BOOST_TEST(shares.size() == static_cast<std::size_t>(processes), run.err);
        const std::vector<int> usable = train::usable_cores();
        std::multiset<int> taken;
        for (const std::vector<int>& share : shares)
          for (const int core : share) {
            BOOST_TEST(std::binary_search(usable.begin(), usable.end(), core));
            taken.insert(core);
          }
        if (usable.size() >= static_cast<std::size_t>(processes))
          BOOST_TEST(std::set<int>(taken.begin(), taken.end()).size() == taken.size(), run.err);
      }
  }
  // Left where they start, the workers share every core, and train alike.
  const std::string job = job_file(dir, "1f1b");
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  const std::string out = (dir.path() / "unbound").string();
  const auto run = test::run_cli("launch --nprocs 2 --bind none " + job + " --steps 10 -o " + out);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  BOOST_TEST(bound_cores(run.err).empty(), run.err);
  const auto reference = test::single_process(*loaded, 10);
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2), reference) < 1e-5);
  // Bound, but --no-pin: each worker leaves its stage threads to the system within its
  // cores, as `run --no-pin` does within all.
  const std::string unpinned = (dir.path() / "unpinned").string();
  const auto no_pin = test::run_cli("launch --nprocs 2 --no-pin " + job + " --steps 10 -o " + unpinned);
  BOOST_REQUIRE_MESSAGE(no_pin.status == 0, no_pin.err);
  BOOST_TEST(bound_cores(no_pin.err).size() == 2u, no_pin.err);
  std::size_t told = 0;
  for (std::size_t at = 0; (at = no_pin.err.find("placed by the system within its cores", at)) != std::string::npos;
       ++at)
    ++told;
  BOOST_TEST(told == 2u, no_pin.err);
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(unpinned + "/checkpoint.pt", 2), reference) < 1e-5);
}

BOOST_AUTO_TEST_CASE(stages_in_different_processes_clip_by_one_norm_and_follow_the_schedule_as_one_process_does) {
  // Each stage's part of the gradient's norm reaches its pipeline's actor across the
  // processes, and every worker's stages take the run's schedule from their order.
  test::ScratchDir dir;
  const std::string schedule = "steps = 10\nlr_schedule = \"linear\"\nwarmup_steps = 3\n";
  auto unclipped = load_job(job_file(dir, "1f1b", "", schedule));
  REQUIRE_OK(unclipped);
  const std::string job = job_file(dir, "1f1b", "", schedule + "clip_norm = 0.2\n"); // the same file, rewritten
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  const auto reference = test::single_process(*loaded, 10);
  BOOST_TEST(test::relative_difference(test::single_process(*unclipped, 10), reference) > 1e-3); // it clips
  for (const int processes : {1, 4})
    BOOST_TEST_CONTEXT(processes << " processes") {
      const std::string out = (dir.path() / ("clipped-" + std::to_string(processes))).string();
      const auto run =
          test::run_cli(processes == 1 ? "run " + job + " -o " + out
                                       : "launch --nprocs " + std::to_string(processes) + " " + job + " -o " + out);
      BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
      BOOST_TEST(contains(run.out, "trained 10 steps"));
      BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2), reference) < 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(a_script_launches_workers_that_train_as_one_process_does) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  auto loaded = load_job(job, {"train.lr=0.02"});
  REQUIRE_OK(loaded);
  const auto reference = test::single_process(*loaded, 6);
  // The Lua module's launch takes the course `actorpipe launch` takes: the library's
  // launch_training(), its workers this program again, the `set` overrides theirs too.
  const std::string script = dir.write("launch.lua", "local run = actorpipe.launch('" + job +
                                                         "', {nprocs = 2, steps = 6, output = 'run', "
                                                         "set = {'train.lr=0.02'}, bind = 'none'})\n"
                                                         "print('trained', run.steps, run.output_dir)\n");
  const std::string out = (dir.path() / "out").string();
  const auto run = test::run_cli("script --allow-io " + script + " --output " + out);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  BOOST_TEST(contains(run.err, "starting 2 workers"), run.err);
  BOOST_TEST(contains(run.out, "trained\t6\t"), run.out);
  workers_say_what_they_run(run.err, 2);
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/run/checkpoint.pt", 2), reference) < 1e-5);
  // A sandboxed script starts no processes; a table, which workers could not load, is
  // not a job file.
  const auto sandboxed = test::run_cli("script " + script + " --output " + (dir.path() / "sandboxed").string());
  BOOST_TEST(sandboxed.status == 2);
  BOOST_TEST(contains(sandboxed.err, "launch: a sandboxed script starts no processes"), sandboxed.err);
  const std::string table =
      dir.write("table.lua", "actorpipe.launch(actorpipe.load_job('" + job + "'), {nprocs = 2, steps = 1})\n");
  const auto refused = test::run_cli("script --allow-io " + table + " --output " + (dir.path() / "table").string());
  BOOST_TEST(refused.status == 2);
  BOOST_TEST(contains(refused.err, "launch: expected the job's file name"), refused.err);
  const std::string bad_bind = dir.write("bind.lua", "actorpipe.launch('" + job + "', {nprocs = 2, bind = 'all'})\n");
  const auto bound = test::run_cli("script --allow-io " + bad_bind + " --output " + (dir.path() / "bind").string());
  BOOST_TEST(bound.status == 2);
  BOOST_TEST(contains(bound.err, "launch: option 'bind' must be \"cores\" or \"none\", not 'all'"), bound.err);
}

BOOST_AUTO_TEST_CASE(lockstep_averaging_runs_across_processes_as_in_one) {
  test::ScratchDir dir;
  const std::string plain = text_of(job_file(dir, "1f1b"));
  // Every pipeline steps on its own gradient, then the replicas average (`average`),
  // or every 2 steps move with each stage's centre (`elastic`): across processes, sums
  // of parameters and of pulls go through c10d, and every worker keeps a copy of the
  // centres, which the checkpoint holds.
  for (const std::string sync : {"average", "elastic"}) {
    const std::string job =
        dir.write(sync + ".toml",
                  plain + "sync = \"" + sync + "\"\n" + (sync == "elastic" ? "[plan.options.elastic]\ntau = 2\n" : ""));
    BOOST_TEST_CONTEXT(sync) { launches_train_as_one_process(dir, job, sync); }
  }
}

BOOST_AUTO_TEST_CASE(ad_psgd_pairs_average_across_processes_as_in_one) {
  test::ScratchDir dir;
  // 4 pipelines on 8 devices: each round pairs them at random, some pairs within a
  // worker and some across two, whose processes make a group of their own as they
  // first meet.
  std::string text = text_of(job_file(dir, "1f1b"));
  for (const auto& [from, to] : {std::pair{"count = 4", "count = 8"}, std::pair{"pipelines = 2", "pipelines = 4"}})
    text.replace(text.find(from), std::string(from).size(), to);
  launches_train_as_one_process(dir, dir.write("ad-psgd.toml", text + "sync = \"ad-psgd\"\n"), "ad-psgd");
}

BOOST_AUTO_TEST_CASE(sdpipe_averages_its_groups_across_processes) {
  test::ScratchDir dir;
  // 4 pipelines on 8 devices. The group scheduler runs in the coordinator and tells the
  // averager of stage s in each worker with a member of a group; those sum the group's
  // snapshots across their processes, and each releases its own members.
  std::string text = text_of(job_file(dir, "1f1b"));
  for (const auto& [from, to] : {std::pair{"count = 4", "count = 8"}, std::pair{"pipelines = 2", "pipelines = 4"}})
    text.replace(text.find(from), std::string(from).size(), to);
  text += "sync = \"sdpipe\"\n";
  // Every ask a forced round of all pipelines, each waiting for its answer: `average`,
  // to the bit, and so the parameters of one process.
  launches_train_as_one_process(
      dir, dir.write("sdpipe-forced.toml", text + "[plan.options.sdpipe]\nforce_every = 1\noverlap = false\n"),
      "sdpipe-forced");
  // As SDPipe runs by default (groups of whoever asks within an adaptive window, each
  // pipeline computing on while its group averages), groups differ from run to run.
  launches_and_trains(dir, dir.write("sdpipe.toml", text), "sdpipe");
}

BOOST_AUTO_TEST_CASE(asynchronous_elastic_averaging_runs_across_processes) {
  test::ScratchDir dir;
  // Each pipeline moves with its stage's centre every 2 of its own steps. Every worker
  // with replicas of a stage keeps a copy of its centre; the coordinator's relay of
  // the stage tells all of them of each move, in one order, and the mover's process
  // sums its move into the others' copies.
  launches_and_trains(dir,
                      dir.write("elastic.toml", text_of(job_file(dir, "1f1b")) +
                                                    "sync = \"elastic\"\n[plan.options.elastic]\nasynchronous = "
                                                    "true\ntau = 2\n"),
                      "elastic", true);
}

BOOST_AUTO_TEST_CASE(a_parameter_server_runs_across_processes) {
  test::ScratchDir dir;
  // The server of each stage stays in the coordinator and keeps the gate; every worker
  // with replicas of the stage keeps a copy of the server's weights, told of each
  // decision in one order, and steps it on the pushes' gradients summed across the
  // workers. Synchronous (staleness 0), it steps once on every pipeline's push: the
  // batch's gradient, and so the parameters of one process.
  const std::string text = text_of(job_file(dir, "1f1b")) + "sync = \"parameter-server\"\n";
  launches_train_as_one_process(
      dir, dir.write("server-0.toml", text + "[plan.options.parameter-server]\nstaleness = 0\n"), "server-0");
  // With the default bound each push is applied as it comes: timing decides.
  launches_and_trains(dir, dir.write("server.toml", text), "server", true);
}

namespace {

/// Two processes' sums across them, played by two threads: each call waits for the
/// other side's, and both get the total.
class TwoSidedSum {
public:
  void operator()(const std::vector<train::Payload>& mine) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!first_) {
      first_ = &mine;
      const std::uint64_t round = round_;
      met_.wait(lock, [&] { return round_ != round; });
      return;
    }
    for (std::size_t i = 0; i < mine.size(); ++i) {
      mine[i]->tensor.add_((*first_)[i]->tensor);
      (*first_)[i]->tensor.copy_(mine[i]->tensor);
    }
    first_ = nullptr;
    ++round_;
    met_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable met_;
  const std::vector<train::Payload>* first_ = nullptr;
  std::uint64_t round_ = 0;
};

/// Two processes' broadcast, played by two threads: each call waits for the other
/// side's, and the side that is not the root gets the root's tensors.
class TwoSidedBroadcast {
public:
  void operator()(const std::vector<train::Payload>& mine, bool root) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!first_) {
      first_ = &mine;
      first_root_ = root;
      const std::uint64_t round = round_;
      met_.wait(lock, [&] { return round_ != round; });
      return;
    }
    const auto& from = root ? mine : *first_;
    const auto& to = root ? *first_ : mine;
    for (std::size_t i = 0; i < mine.size(); ++i)
      to[i]->tensor.copy_(from[i]->tensor);
    roots_ += (root ? 1 : 0) + (first_root_ ? 1 : 0);
    first_ = nullptr;
    ++round_;
    met_.notify_all();
  }
  std::uint64_t rounds() const { return round_; }
  std::uint64_t roots() const { return roots_; } ///< one a round, where both sides agree

private:
  std::mutex mutex_;
  std::condition_variable met_;
  const std::vector<train::Payload>* first_ = nullptr;
  bool first_root_ = false;
  std::uint64_t round_ = 0, roots_ = 0;
};

/// One of the processes that threads play: its session and its run's setup, made from
/// `p` (`prepare`, where given, changes the session first).
struct PlayedProcess {
  std::unique_ptr<train::Session> session;
  std::unique_ptr<actors::RunSetup> setup;
};

PlayedProcess played(const test::MeasuredPlan& p, const std::function<void(train::Session&)>& prepare = {}) {
  PlayedProcess made;
  auto opened = train::Session::open(p.job, p.plan);
  REQUIRE_OK(opened);
  made.session = std::move(*opened);
  if (prepare) prepare(*made.session);
  auto prepared = actors::prepare_run(p.job, p.plan, RunOptions{}, *made.session);
  REQUIRE_OK(prepared);
  made.setup = std::move(*prepared);
  return made;
}

/// `a` holds pipeline 0's replicas, `b` pipeline 1's: their sums and broadcasts across
/// the two, by stage, go through `sums` and `broadcasts`.
void span_two_processes(PlayedProcess& a, PlayedProcess& b, std::vector<TwoSidedSum>& sums,
                        std::vector<TwoSidedBroadcast>& broadcasts) {
  for (auto [side, pipeline] : {std::pair{&a, std::size_t{0}}, std::pair{&b, std::size_t{1}}})
    side->setup->sync->span_processes(
        {[pipeline = pipeline](std::size_t, std::size_t q) { return q == pipeline; },
         [&sums](std::size_t s, const std::vector<std::size_t>&, const std::vector<train::Payload>& t) { sums[s](t); },
         [](std::size_t, std::size_t q) { return q; },
         [&broadcasts, pipeline = pipeline](std::size_t s, const std::vector<std::size_t>&, std::size_t root,
                                            const std::vector<train::Payload>& t) {
           broadcasts[s](t, root == pipeline);
         }});
}

/// A replica's parameters, copied.
std::vector<torch::Tensor> parameters_of(train::StageWorker& replica) {
  std::vector<torch::Tensor> copied;
  for (const torch::Tensor& t : replica.impl().parameters)
    copied.push_back(t.detach().clone());
  return copied;
}

/// What `side`'s policy trains of stage s, copied: with_model() puts it (an elastic
/// centre, a server's weights) in pipeline 0's replica for the while.
std::vector<torch::Tensor> model_of(PlayedProcess& side, std::size_t s) {
  std::vector<torch::Tensor> copied;
  side.setup->sync->with_model([&] { copied = parameters_of(side.session->worker(0, s)); });
  return copied;
}

/// Equal to the bit, and not empty.
bool same_tensors(const std::vector<torch::Tensor>& x, const std::vector<torch::Tensor>& y) {
  bool equal = x.size() == y.size() && !x.empty();
  for (std::size_t i = 0; equal && i < x.size(); ++i)
    equal = torch::equal(x[i], y[i]);
  return equal;
}

} // namespace

BOOST_AUTO_TEST_CASE(asynchronous_elastic_centres_in_two_processes_move_as_one) {
  // Pipeline 0's replica in process A, pipeline 1's in B, each keeping a copy of the
  // stage's centre; one process's run holds both. Each pipeline moves with the centre
  // in turn: the mover sends its move to the other's copy (which follows), so both
  // copies, and each replica, end as in the one process, to the bit.
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b")) +
                                           "sync = \"elastic\"\n[plan.options.elastic]\nasynchronous = true\n");
  auto other_seed = p.job;
  other_seed.job.seed += 1;
  auto different = train::Session::open(other_seed, p.plan);
  REQUIRE_OK(different);
  // Pipeline 1 starts elsewhere than pipeline 0 (and the centre, made from pipeline 0).
  const auto process = [&] {
    PlayedProcess made = played(p, [&](train::Session& session) {
      for (std::size_t s = 0; s < p.plan.stages.size(); ++s)
        session.worker(1, s).load_state_bytes((*different)->worker(0, s).state_bytes());
    });
    BOOST_REQUIRE(std::holds_alternative<actors::ElasticAveraging>(made.setup->job.mode));
    return made;
  };
  PlayedProcess one = process(), a = process(), b = process();
  std::vector<TwoSidedSum> sums(p.plan.stages.size());
  std::vector<TwoSidedBroadcast> broadcasts(p.plan.stages.size());
  span_two_processes(a, b, sums, broadcasts);
  const auto move = [](train::SyncExecutor& sync, std::size_t s, std::size_t pipeline, bool mine) {
    if (mine) sync.snapshot(s, pipeline);
    sync.average(s, {pipeline});
    if (mine) sync.correct(s, pipeline);
  };
  for (std::size_t s = 0; s < p.plan.stages.size(); ++s)
    for (const std::size_t pipeline : {0, 1, 0}) {
      move(*one.setup->sync, s, pipeline, true);
      std::thread other([&] { move(*b.setup->sync, s, pipeline, pipeline == 1); });
      move(*a.setup->sync, s, pipeline, pipeline == 0);
      other.join();
    }
  for (std::size_t s = 0; s < p.plan.stages.size(); ++s)
    BOOST_TEST_CONTEXT("stage " << s) {
      // Each of the three moves went from the mover's side to the other's.
      BOOST_TEST(broadcasts[s].rounds() == 3u);
      BOOST_TEST(broadcasts[s].roots() == 3u);
      BOOST_TEST(same_tensors(model_of(a, s), model_of(one, s)));
      BOOST_TEST(same_tensors(model_of(b, s), model_of(one, s)));
      BOOST_TEST(!same_tensors(model_of(one, s), parameters_of(one.session->worker(0, s)))); // the centre moved
      BOOST_TEST(same_tensors(parameters_of(a.session->worker(0, s)), parameters_of(one.session->worker(0, s))));
      BOOST_TEST(same_tensors(parameters_of(b.session->worker(1, s)), parameters_of(one.session->worker(1, s))));
    }
}

BOOST_AUTO_TEST_CASE(a_parameter_servers_copies_in_two_processes_step_as_one_on_pushes_sent_from_their_pushers) {
  // Pipeline 0's replica in process A, pipeline 1's in B, each keeping a copy of each
  // stage's server; one process's run holds both. A push from one process's pipelines
  // alone goes from there to the other as it is (no sum with the other's zeros); a push
  // from both is summed. Every copy, and each pusher, ends as in the one process, to the
  // bit.
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b")) + "sync = \"parameter-server\"\n");
  const auto process = [&] {
    PlayedProcess made = played(p);
    BOOST_REQUIRE(std::holds_alternative<actors::ParameterServer>(made.setup->job.mode));
    return made;
  };
  PlayedProcess one = process(), a = process(), b = process();
  const std::size_t S = p.plan.stages.size();
  std::vector<TwoSidedSum> sums(S);
  std::vector<TwoSidedBroadcast> broadcasts(S);
  span_two_processes(a, b, sums, broadcasts);
  // Pipeline q's gradient of push k: its own values, on every replica that holds it.
  const auto push = [](PlayedProcess& side, std::size_t s, std::size_t q, int k) {
    for (torch::Tensor& parameter : side.session->worker(q, s).impl().parameters)
      parameter.mutable_grad() = torch::full_like(parameter, 0.01 * (k + 1) * (q + 1));
  };
  const std::vector<std::vector<std::size_t>> decisions{{0}, {1}, {0, 1}, {1}};
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t k = 0; k < decisions.size(); ++k) {
      for (const std::size_t q : decisions[k]) {
        push(one, s, q, static_cast<int>(k));
        push(q == 0 ? a : b, s, q, static_cast<int>(k));
      }
      one.setup->sync->serve(s, decisions[k]);
      std::thread other([&] { b.setup->sync->serve(s, decisions[k]); });
      a.setup->sync->serve(s, decisions[k]);
      other.join();
    }
  for (std::size_t s = 0; s < S; ++s)
    BOOST_TEST_CONTEXT("stage " << s) {
      // Three pushes from one process each went as a broadcast (gradients, then which
      // parameters had one), from the pusher's side; the one from both, as sums.
      BOOST_TEST(broadcasts[s].rounds() == 6u);
      BOOST_TEST(broadcasts[s].roots() == 6u);
      BOOST_TEST(same_tensors(model_of(a, s), model_of(one, s)));
      BOOST_TEST(same_tensors(model_of(b, s), model_of(one, s)));
      BOOST_TEST(same_tensors(parameters_of(a.session->worker(0, s)), parameters_of(one.session->worker(0, s))));
      BOOST_TEST(same_tensors(parameters_of(b.session->worker(1, s)), parameters_of(one.session->worker(1, s))));
    }
}

BOOST_AUTO_TEST_CASE(a_parameter_server_stepping_on_each_push_alone_moves_a_batchs_worth_over_a_batchs_pushes) {
  // Adam takes the gradient's scale out: its first steps on a constant gradient are each
  // the learning rate long, whatever the gradient. A server steps on a push alone at
  // the learning rate × the share of the batch the push is, so the two pipelines'
  // pushes, one at a time, move it as far as one step on both: the learning rate, not
  // twice it.
  test::ScratchDir dir;
  std::string text = text_of(job_file(dir, "1f1b"));
  const std::string sgd = "optimizer = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n";
  BOOST_REQUIRE(text.find(sgd) != std::string::npos);
  text.replace(text.find(sgd), sgd.size(), "optimizer = \"adam\"\nlr = 0.01\n");
  const auto p = test::quick_plan(dir, text + "sync = \"parameter-server\"\n");
  PlayedProcess alone = played(p), together = played(p);
  const auto push = [](PlayedProcess& side, std::size_t s, std::size_t q) {
    for (torch::Tensor& parameter : side.session->worker(q, s).impl().parameters)
      parameter.mutable_grad() = torch::full_like(parameter, 0.5);
  };
  for (std::size_t s = 0; s < p.plan.stages.size(); ++s)
    BOOST_TEST_CONTEXT("stage " << s) {
      const std::vector<torch::Tensor> before = model_of(alone, s);
      for (const std::size_t q : {0, 1}) {
        push(alone, s, q);
        alone.setup->sync->serve(s, {q});
        push(together, s, q);
      }
      together.setup->sync->serve(s, {0, 1});
      const std::vector<torch::Tensor> one_at_a_time = model_of(alone, s), both = model_of(together, s);
      BOOST_REQUIRE(!before.empty());
      for (std::size_t i = 0; i < before.size(); ++i) {
        BOOST_TEST((before[i] - both[i] - 0.01).abs().max().item<double>() < 1e-5, "parameter " << i);
        BOOST_TEST((before[i] - one_at_a_time[i] - 0.01).abs().max().item<double>() < 1e-5, "parameter " << i);
      }
    }
}

BOOST_AUTO_TEST_CASE(a_parameter_server_stepping_on_each_push_alone_keeps_momentum_a_batchs_worth_of_pushes) {
  // SGD with momentum 0.9: 30 batches of a constant gradient, then 30 of none, along
  // which momentum carries the parameters on. Stepping on each of the two pipelines'
  // pushes alone, the distance coasted is within 5% of stepping once on both; with
  // momentum decaying by 0.9 at every push it would be half of it.
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b")) + "sync = \"parameter-server\"\n");
  PlayedProcess alone = played(p), together = played(p);
  const auto push = [](PlayedProcess& side, std::size_t s, std::size_t q, double value) {
    for (torch::Tensor& parameter : side.session->worker(q, s).impl().parameters)
      parameter.mutable_grad() = torch::full_like(parameter, value);
  };
  const std::size_t s = 0;
  const auto batches = [&](int count, double value) {
    for (int b = 0; b < count; ++b) {
      for (const std::size_t q : {0, 1}) {
        push(alone, s, q, value);
        alone.setup->sync->serve(s, {q});
        push(together, s, q, value);
      }
      together.setup->sync->serve(s, {0, 1});
    }
  };
  batches(30, 0.5);
  const std::vector<torch::Tensor> alone_at = model_of(alone, s), together_at = model_of(together, s);
  batches(30, 0.0);
  const std::vector<torch::Tensor> alone_end = model_of(alone, s), together_end = model_of(together, s);
  BOOST_REQUIRE(!alone_at.empty());
  for (std::size_t i = 0; i < alone_at.size(); ++i) {
    const double coasted_alone = (alone_at[i] - alone_end[i]).mean().item<double>();
    const double coasted_together = (together_at[i] - together_end[i]).mean().item<double>();
    BOOST_TEST(coasted_together > 0, "parameter " << i);
    BOOST_TEST(coasted_alone == coasted_together, "parameter " << i << boost::test_tools::tolerance(0.05));
  }
}

BOOST_AUTO_TEST_CASE(gradients_summed_across_processes_cross_as_one_buffer_and_every_replica_steps_on_the_sum) {
  // Both pipelines' replicas of a stage in this process, another process's equal sums
  // doubling theirs. The first replica's gradients cross as views of one buffer; it
  // then steps and starts its next gradient before the second steps on the sum they
  // share, as their stage threads may.
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b")));
  auto opened = train::Session::open(p.job, p.plan);
  REQUIRE_OK(opened);
  train::StageWorker& first = (*opened)->worker(0, 0);
  train::StageWorker& second = (*opened)->worker(1, 0);
  BOOST_REQUIRE(!first.impl().parameters.empty());
  for (auto [replica, value] : {std::pair{&first, 1.0f}, std::pair{&second, 2.0f}})
    for (torch::Tensor& parameter : replica->impl().parameters)
      parameter.mutable_grad() = torch::full_like(parameter, value);
  bool one_buffer = false;
  train::sum_gradients_across({&first, &second}, 0.25, [&](const std::vector<train::Payload>& sums) {
    one_buffer = transport::TensorTransport::as_one_buffer(sums) != nullptr;
    for (const train::Payload& sum : sums)
      sum->tensor.mul_(2);
  });
  BOOST_TEST(one_buffer);
  for (auto* replica : {&first, &second})
    for (const torch::Tensor& parameter : replica->impl().parameters)
      BOOST_TEST(torch::equal(parameter.grad(), torch::full_like(parameter, 1.5f)));
  first.step(1, 0);
  std::vector<train::Payload> next; // accumulated in place, as a backward does
  for (torch::Tensor& parameter : first.impl().parameters) {
    BOOST_TEST(torch::equal(parameter.grad(), torch::zeros_like(parameter)));
    parameter.mutable_grad().add_(7.0);
    next.push_back(train::wrap(parameter.grad()));
  }
  BOOST_TEST(transport::TensorTransport::as_one_buffer(next) != nullptr);
  second.step(1, 0);
  for (std::size_t i = 0; i < first.impl().parameters.size(); ++i)
    BOOST_TEST(torch::equal(first.impl().parameters[i], second.impl().parameters[i]));
}

BOOST_AUTO_TEST_CASE(under_fp16_replicas_sharing_a_summed_gradient_each_unscale_it_once) {
  // Two pipelines' replicas of a stage hold one summed, loss-scaled gradient: each steps
  // on the sum over the scale, whichever steps first.
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b", "", "precision = \"fp16\"\n")));
  auto opened = train::Session::open(p.job, p.plan);
  REQUIRE_OK(opened);
  train::StageWorker& first = (*opened)->worker(0, 0);
  train::StageWorker& second = (*opened)->worker(1, 0);
  BOOST_REQUIRE(first.impl().scaler);
  const double scale = first.impl().scaler->scale().item<double>();
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& parameter : first.impl().parameters)
    before.push_back(parameter.detach().clone());
  for (auto [replica, value] : {std::pair{&first, 1.0}, std::pair{&second, 2.0}})
    for (torch::Tensor& parameter : replica->impl().parameters)
      parameter.mutable_grad() = torch::full_like(parameter, value * scale);
  train::sum_gradients({&first, &second});
  first.step(1, 0);
  second.step(1, 0);
  // SGD's first step with momentum: lr × the gradient, 0.05 × 3.
  for (std::size_t i = 0; i < before.size(); ++i) {
    BOOST_TEST(torch::allclose(before[i] - first.impl().parameters[i], torch::full_like(before[i], 0.15), 1e-5, 1e-6));
    BOOST_TEST(torch::equal(first.impl().parameters[i], second.impl().parameters[i]));
  }
}

BOOST_AUTO_TEST_CASE(a_bound_workers_stages_share_its_cores_among_themselves_alone) {
  // A worker bound to its share of the cores holds 2 of the plan's 4 stages: each
  // computes with half its cores, not a quarter (which would leave half of them idle).
  test::ScratchDir dir;
  const auto p = test::quick_plan(dir, text_of(job_file(dir, "1f1b")));
  const int cores = static_cast<int>(train::usable_cores().size());
  auto all = train::Session::open(p.job, p.plan);
  auto two = train::Session::open(p.job, p.plan, nullptr, 2);
  REQUIRE_OK(all);
  REQUIRE_OK(two);
  BOOST_TEST((*all)->worker(1, 1).setup().threads == std::max(1, cores / 4));
  BOOST_TEST((*two)->worker(1, 1).setup().threads == std::max(1, cores / 2));
}

BOOST_AUTO_TEST_CASE(a_process_with_the_same_data_makes_the_batch_rows_a_parcel_names_instead_of_their_bytes) {
  test::ScratchDir dir;
  const std::string text = text_of(job_file(dir, "1f1b"));
  const auto p = test::quick_plan(dir, text);
  auto coordinator = train::Session::open(p.job, p.plan);
  auto worker = train::Session::open(p.job, p.plan);
  REQUIRE_OK(coordinator);
  REQUIRE_OK(worker);
  BOOST_TEST((*coordinator)->data_fingerprint() == (*worker)->data_fingerprint());
  auto other = train::Session::open(
      test::quick_plan(dir, std::regex_replace(text, std::regex("samples = 512"), "samples = 480")).job, p.plan);
  REQUIRE_OK(other);
  BOOST_TEST((*other)->data_fingerprint() != (*coordinator)->data_fingerprint());

  // The second pipeline's share of batch 3's labels, then its second micro-batch, cut
  // as the job and the pipeline cut them.
  const train::Batch batch = (*coordinator)->batch(0, 3);
  const std::uint32_t half = batch.samples / 2;
  const train::Payload share = train::split_rows(batch.labels, {half, batch.samples - half})[1];
  const train::Payload micro = train::split_rows(share, {2, batch.samples - half - 2})[1];
  const train::BatchRows* rows = train::batch_rows(micro);
  BOOST_REQUIRE(rows);
  BOOST_TEST(rows->epoch == 0u);
  BOOST_TEST(rows->index == 3u);
  BOOST_TEST(rows->first == half + 2);
  BOOST_TEST(rows->count == batch.samples - half - 2);
  BOOST_TEST(rows->labels);

  // For a process that makes rows, a parcel is which rows; CAF carries them; that
  // process makes the same tensor. For one that does not, its bytes go.
  transport::TransportOptions options;
  options.store = {"127.0.0.1", 0};
  auto opened = transport::TensorTransport::open(options);
  REQUIRE_OK(opened);
  actors::Parcel named = actors::pack(micro, actors::Route{opened->get(), 1, true});
  BOOST_TEST(named.by_rows);
  BOOST_TEST((named.rows == *rows));
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  BOOST_REQUIRE(!sink(named));
  actors::Parcel arrived;
  caf::binary_deserializer source{nullptr, bytes};
  BOOST_REQUIRE(!source(arrived));
  BOOST_TEST(arrived.remote);
  BOOST_TEST(arrived.by_rows);
  const actors::RowMaker make = [&](const train::BatchRows& r) { return (*worker)->rows(r); };
  actors::Incoming made = actors::open(arrived, nullptr, make);
  BOOST_TEST(made.landed());
  BOOST_TEST(torch::equal(made.take()->tensor, micro->tensor));
  BOOST_CHECK_THROW(actors::open(arrived, nullptr), std::runtime_error); // no data to make them from
  // Activations are no batch's rows: their bytes go.
  BOOST_TEST(!train::batch_rows(train::wrap(torch::ones({2}))));

  // A coordinator whose workers all make their rows names the batch without making it:
  // cut alike, it packs into the same parcel; anywhere else it cannot go.
  const train::Batch named_only = (*coordinator)->batch_rows_only(0, 3);
  BOOST_TEST(named_only.samples == batch.samples);
  BOOST_TEST(!train::has_tensor(named_only.labels));
  BOOST_TEST(train::has_tensor(batch.labels));
  const train::Payload bare = train::split_rows(train::split_rows(named_only.labels, {half, batch.samples - half})[1],
                                                {2, batch.samples - half - 2})[1];
  BOOST_TEST(!train::has_tensor(bare));
  const actors::Parcel same = actors::pack(bare, actors::Route{opened->get(), 1, true});
  BOOST_TEST(same.by_rows);
  BOOST_TEST((same.rows == *rows));
  BOOST_CHECK_THROW(actors::pack(bare, actors::Route{opened->get(), 1, false}), std::logic_error);
  BOOST_CHECK_THROW(actors::pack(bare, actors::Route{}), std::logic_error);
  BOOST_TEST(train::batch_rows(named_only.inputs)->labels == false);
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
  const GateEndsWithTest ends{gate};
  auto port = coordinator.middleman().publish(gate, 0, "127.0.0.1");
  BOOST_REQUIRE(static_cast<bool>(port));
  auto remote = worker.middleman().remote_actor<actors::gate_actor>("127.0.0.1", *port);
  BOOST_REQUIRE(static_cast<bool>(remote));
  caf::scoped_actor self{worker};
  const auto join = [&](const std::string& token) {
    std::optional<actors::JobOrder> order;
    std::string refused;
    self->request(*remote, std::chrono::seconds(30), actors::join_atom::value, token, std::string("rogue"),
                  std::uint32_t{7})
        .receive([&](actors::JobOrder& o) { order = std::move(o); },
                 [&](caf::error& e) { refused = worker.render(e); });
    return std::make_pair(order, refused);
  };
  // A worker process with another token: refused, and the gate logs where it came from.
  test::ScratchDir dir;
  const std::string wrong = dir.write("token", "a-wrong-token-long-enough-to-be-taken\n");
  ::chmod(wrong.c_str(), 0600);
  const auto refused =
      test::run_cli("worker --coordinator 127.0.0.1:" + std::to_string(*port) + " --token-file " + wrong);
  BOOST_TEST(refused.status == 2);
  // The gate's own words, not CAF's rendering of the error that carries them.
  BOOST_TEST(contains(refused.err, "refused this worker: wrong token"), refused.err);
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
}

BOOST_AUTO_TEST_CASE(a_worker_refuses_a_plan_that_came_damaged_or_was_made_for_another_job) {
  // Workers run the plan the coordinator sends, planning nothing: one whose SHA-256
  // does not match, or made for a job other than the one the worker's server reads,
  // is named before anything runs.
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  const std::string token = dir.write("token", "a-token-long-enough-to-be-taken-here\n");
  ::chmod(token.c_str(), 0600);
  const auto worker_given = [&](const actors::JobOrder& order) {
    caf::actor_system_config config;
    config.load<caf::io::middleman>();
    actors::add_process_message_types(config);
    caf::actor_system coordinator{config};
    actors::GateConfig gate_config;
    gate_config.token = "a-token-long-enough-to-be-taken-here";
    gate_config.order = order;
    gate_config.workers = 1;
    auto gate = actors::spawn_gate(coordinator, gate_config);
    const GateEndsWithTest ends{gate};
    auto port = coordinator.middleman().publish(gate, 0, "127.0.0.1");
    BOOST_REQUIRE(static_cast<bool>(port));
    return test::run_cli("worker --coordinator 127.0.0.1:" + std::to_string(*port) + " --token-file " + token);
  };
  const auto order_of = [&](const Plan& plan) {
    actors::JobOrder order;
    order.job_file = job;
    order.profile_toml = text_of((dir.path() / "profile.toml").string());
    order.plan = planner::plan_to_wire(plan);
    order.plan_sha256 = sha256_hex(order.plan);
    order.world = 2;
    return order;
  };
  const test::MeasuredPlan here = test::quick_plan(dir, text_of(job));
  actors::JobOrder damaged = order_of(here.plan);
  damaged.plan[damaged.plan.find("\"pipelines\":2") + 12] = '3'; // 2 pipelines become 3
  const auto told_damaged = worker_given(damaged);
  BOOST_TEST(told_damaged.status == 1);
  BOOST_TEST(contains(told_damaged.err, "the coordinator's plan came damaged"), told_damaged.err);

  std::string elsewhere = text_of(job);
  elsewhere.replace(elsewhere.find("name = \"cpu-4\""), 14, "name = \"cpu-X\"");
  const test::MeasuredPlan there = test::quick_plan(dir, elsewhere);
  const auto told_other = worker_given(order_of(there.plan));
  BOOST_TEST(told_other.status == 2);
  BOOST_TEST(contains(told_other.err, "this server's job is not the one the coordinator planned"), told_other.err);
  BOOST_TEST(contains(told_other.err, "the plan is for cluster 'cpu-X', the job here names 'cpu-4'"), told_other.err);
}

BOOST_AUTO_TEST_CASE(a_worker_that_cannot_reach_its_coordinator_says_where_and_how_long_it_tried) {
  test::ScratchDir dir;
  const std::string token = dir.write("token", "a-token-long-enough-to-be-taken-0123\n");
  ::chmod(token.c_str(), 0600);
  // Nothing listens on port 1.
  const auto lone = test::run_cli("worker --coordinator 127.0.0.1:1 --token-file " + token + " --connect-timeout 1");
  BOOST_TEST(lone.status == 1);
  BOOST_TEST(contains(lone.err, "the coordinator at 127.0.0.1:1: cannot reach it (tried for 1 s): nothing there "
                                "accepted the connection"),
             lone.err);
  // Something that accepts the connection (the kernel does, for a socket that listens)
  // and never answers: CAF's handshake waited for it without end.
  std::string where;
  const int silent = loopback_listener(where);
  const auto unanswered =
      test::run_cli("worker --coordinator " + where + " --token-file " + token + " --connect-timeout 1");
  ::close(silent);
  BOOST_TEST(unanswered.status == 1);
  BOOST_TEST(contains(unanswered.err, "the coordinator at " + where +
                                          ": cannot reach it (tried for 1 s): it accepted "
                                          "the connection and never answered"),
             unanswered.err);
}

BOOST_AUTO_TEST_CASE(the_gate_gives_each_worker_a_place_on_its_own_machine) {
  caf::actor_system_config config;
  actors::add_process_message_types(config);
  caf::actor_system system{config};
  actors::GateConfig gate_config;
  gate_config.token = "t";
  gate_config.workers = 3;
  gate_config.hosts = {"beta", "", "beta"}; // rank 2's devices are on a server the file names no host for
  std::vector<std::string> log;
  gate_config.log = [&](const std::string& line) { log.push_back(line); };
  auto gate = actors::spawn_gate(system, gate_config);
  const GateEndsWithTest ends{gate};
  caf::scoped_actor self{system};
  const auto join = [&](const std::string& host) -> std::variant<std::uint64_t, std::string> {
    std::variant<std::uint64_t, std::string> outcome;
    self->request(gate, std::chrono::seconds(30), actors::join_atom::value, std::string("t"), host, std::uint32_t{1})
        .receive([&](actors::JobOrder& order) { outcome = order.rank; },
                 [&](caf::error& e) { outcome = system.render(e); });
    return outcome;
  };
  BOOST_TEST(std::get<std::uint64_t>(join("gamma")) == 2u); // the place any machine may take
  BOOST_TEST(std::get<std::uint64_t>(join("beta")) == 1u);
  const auto refused = join("gamma");
  BOOST_REQUIRE(std::holds_alternative<std::string>(refused));
  BOOST_TEST(
      contains(std::get<std::string>(refused), "no free worker place on host 'gamma' (the free ones are on beta)"),
      std::get<std::string>(refused));
  BOOST_REQUIRE_EQUAL(log.size(), 1u);
  BOOST_TEST(contains(log[0], "refused a worker on gamma pid 1"), log[0]);
  BOOST_TEST(std::get<std::uint64_t>(join("beta")) == 3u);
}

/// Whether the `openssl` program is here to make the TLS test's certificates.
boost::test_tools::assertion_result has_openssl(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(std::system("command -v openssl >/dev/null") == 0);
  if (!result) result.message() << "no openssl program to make certificates with";
  return result;
}

/// A self-signed certificate and its key, as NAME.pem and NAME.key in `dir`.
launch::TlsFiles self_signed(const test::ScratchDir& dir, const std::string& name) {
  const std::string certificate = (dir.path() / (name + ".pem")).string(),
                    key = (dir.path() / (name + ".key")).string();
  const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name + " -keyout " + key +
                           " -out " + certificate + " 2>/dev/null";
  BOOST_REQUIRE(std::system(make.c_str()) == 0);
  return {certificate, key, certificate};
}

BOOST_AUTO_TEST_CASE(with_tls_only_a_worker_whose_certificate_the_authority_signed_reaches_the_gate,
                     *boost::unit_test::precondition(has_openssl)) {
  test::ScratchDir dir;
  const launch::TlsFiles ours = self_signed(dir, "ours"), theirs = self_signed(dir, "theirs");
  caf::actor_system_config coordinator_config;
  actors::load_control_plane(coordinator_config, ours);
  actors::add_process_message_types(coordinator_config);
  caf::actor_system coordinator{coordinator_config};
  actors::GateConfig gate_config;
  gate_config.token = "t";
  gate_config.workers = 1;
  auto gate = actors::spawn_gate(coordinator, gate_config);
  const GateEndsWithTest ends{gate};
  auto port = actors::publish_gate(coordinator, gate, {"127.0.0.1", 0}, ours);
  BOOST_REQUIRE(static_cast<bool>(port));
  const auto reaches = [&](const launch::TlsFiles& tls) {
    caf::actor_system_config config;
    actors::load_control_plane(config, tls);
    actors::add_process_message_types(config);
    caf::actor_system worker{config};
    return static_cast<bool>(actors::reach_gate(worker, {"127.0.0.1", *port}, tls));
  };
  BOOST_TEST(!reaches({}));     // plain TCP: no TLS handshake
  BOOST_TEST(!reaches(theirs)); // a certificate another authority signed
  BOOST_TEST(reaches(ours));
}

BOOST_AUTO_TEST_CASE(tls_files_that_openssl_cannot_use_are_named_before_anything_starts,
                     *boost::unit_test::precondition(has_openssl)) {
  test::ScratchDir dir;
  const launch::TlsFiles ours = self_signed(dir, "ours"), theirs = self_signed(dir, "theirs");
  REQUIRE_OK(launch::check_tls_files(ours));
  const std::string garbage = dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n");
  const std::string encrypted = (dir.path() / "encrypted.key").string();
  BOOST_REQUIRE(
      std::system(("openssl pkey -in " + ours.key + " -aes128 -passout pass:secret -out " + encrypted + " 2>/dev/null")
                      .c_str()) == 0);
  const std::pair<launch::TlsFiles, std::string> cases[] = {
      {{garbage, ours.key, ours.authority}, "--tls-certificate " + garbage + ": is not a PEM certificate"},
      {{ours.certificate, ours.key, garbage}, "--tls-ca " + garbage + ": is not a PEM certificate"},
      {{ours.certificate, garbage, ours.authority}, "--tls-key " + garbage + ": is not a PEM private key"},
      {{ours.certificate, encrypted, ours.authority}, "or is encrypted"},
      {{ours.certificate, theirs.key, ours.authority},
       "--tls-key " + theirs.key + ": is not the key of --tls-certificate " + ours.certificate},
  };
  for (const auto& [files, message] : cases) {
    BOOST_TEST_CONTEXT(message) {
      const Status checked = launch::check_tls_files(files);
      BOOST_REQUIRE(!checked.ok());
      BOOST_TEST(exit_status(checked.error().code) == 2);
      BOOST_TEST(contains(checked.error().message, message), checked.error().message);
    }
  }
  // Launched, the coordinator names the file and exits 2 before it starts a worker.
  const std::string job = job_file(dir, "gpipe");
  const std::string out = (dir.path() / "run").string();
  const auto run = test::run_cli("launch --nprocs 2 " + job + " --steps 2 -o " + out + " --tls-certificate " +
                                 ours.certificate + " --tls-key " + theirs.key + " --tls-ca " + ours.authority);
  BOOST_TEST(run.status == 2);
  BOOST_TEST(contains(run.err, "is not the key of --tls-certificate"), run.err);
  BOOST_TEST(!std::filesystem::exists(out));
}

BOOST_AUTO_TEST_CASE(launched_workers_train_over_tls, *boost::unit_test::precondition(has_openssl)) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "gpipe");
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  const launch::TlsFiles tls = self_signed(dir, "job");
  const std::string out = (dir.path() / "run").string();
  const auto run = test::run_cli("launch --nprocs 2 " + job + " --steps 10 -o " + out + " --tls-certificate " +
                                 tls.certificate + " --tls-key " + tls.key + " --tls-ca " + tls.authority);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2),
                                       test::single_process(*loaded, 10)) < 1e-5);
  const auto half = test::run_cli("launch --nprocs 2 " + job + " --steps 10 -o " + out + " --tls-key " + tls.key);
  BOOST_TEST(half.status == 2);
  BOOST_TEST(contains(half.err, "--tls-certificate: missing"), half.err);
}

BOOST_AUTO_TEST_CASE(a_coordinator_killed_outright_leaves_no_copy_of_the_token_behind) {
  // The token reaches the workers started here in their environment: there is no file
  // of it for a coordinator that cannot clean up (SIGKILL) to leave behind.
  const auto token_folders = [] {
    std::set<std::string> folders;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
      if (entry.path().filename().string().rfind("actorpipe-launch-", 0) == 0) folders.insert(entry.path().string());
    return folders;
  };
  const std::set<std::string> before = token_folders();
  test::ScratchDir dir;
  const std::string job = job_file(dir, "gpipe");
  test::RunningCli launch({"launch", "--nprocs", "2", job, "--steps", "100000", "-o", (dir.path() / "run").string()});
  BOOST_REQUIRE_MESSAGE(launch.wait_for_line("training '"), launch.err); // the workers joined with the token
  launch.signal(SIGKILL);
  BOOST_TEST(launch.wait() == 128 + SIGKILL);
  BOOST_TEST(token_folders() == before, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_lost_worker_ends_the_run_naming_it_its_stages_and_the_last_step) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  // Stage 1's worker processes end at once as they start step 4, as killed ones would.
  const auto run = test::run_cli("launch --nprocs 2 " + job + " --steps 10 -o " + (dir.path() / "run").string() +
                                 " --inject-failure 1:4:exit");
  BOOST_TEST(run.status == 1, run.err);
  // Each worker runs a whole pipeline: the lost one is named with both its stages.
  const std::regex named(R"(worker process [12] \(stage 0 of pipeline ([01]), stage 1 of pipeline \1\) is gone: )"
                         R"(its connection closed \(the process ended, or was killed\))");
  BOOST_TEST(std::regex_search(run.err, named), run.err);
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
  BOOST_TEST(contains(run.err, ") is gone: its connection closed"), run.err);
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

BOOST_AUTO_TEST_CASE(a_stage_stuck_at_work_in_a_live_worker_is_named_and_a_restart_takes_the_run_on) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  // Stage 1's threads block for good in their first action of step 4; their processes
  // go on answering heartbeats, and only the stages' own activity tells.
  const std::string stall = " --steps 10 --inject-failure 1:4:stall --stall-timeout 1 -o ";
  const auto run = test::run_cli("launch --nprocs 2 " + job + stall + (dir.path() / "run").string());
  BOOST_TEST(run.status == 1, run.err);
  BOOST_TEST(contains(run.err, "actorpipe: worker process "), run.err);
  BOOST_TEST(contains(run.err, "): stage 1 of pipeline "), run.err);
  BOOST_TEST(contains(run.err, "has worked on step 4 for "), run.err);
  BOOST_TEST(contains(run.err, "without finishing (its thread is stuck)"), run.err);
  BOOST_TEST(contains(run.err, "the last completed step is "), run.err);
  BOOST_TEST(!contains(run.err, "did not answer a heartbeat"), run.err);
  BOOST_TEST(!contains(run.out, "trained"));
  // The fault strikes once: the restarted workers train on from the start.
  const std::string out = (dir.path() / "restarted").string();
  const auto restarted = test::run_cli("launch --nprocs 2 " + job + stall + out + " --restart 1");
  BOOST_REQUIRE_MESSAGE(restarted.status == 0, restarted.err);
  BOOST_TEST(contains(restarted.err, "(its thread is stuck)"), restarted.err);
  BOOST_TEST(contains(restarted.out, "trained 10 steps"), restarted.out);
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2),
                                       test::single_process(*loaded, 10)) < 1e-5);
}

BOOST_AUTO_TEST_CASE(two_servers_joined_by_a_slow_link_train_as_one_process_does,
                     *boost::unit_test::precondition(can_make_namespaces)) {
  test::ScratchDir dir;
  const std::string job = job_file(dir, "1f1b");
  auto loaded = load_job(job);
  REQUIRE_OK(loaded);
  const TwoServers servers;
  BOOST_REQUIRE_MESSAGE(servers.made(), "could not make the two namespaces");
  const std::string token = dir.write("token", "the-job-token-long-enough-to-be-taken\n");
  ::chmod(token.c_str(), 0600);
  // Server a coordinates and starts one worker; the other runs on server b, and what it
  // exchanges with the others crosses the link (where a worker's tensor connections
  // bound to loopback, neither side could reach the other). The worker may start
  // first: it keeps trying.
  const std::string cli = "'" + std::string(std::getenv("ACTORPIPE_CLI")) + "'";
  const auto file = [&](const std::string& name) { return (dir.path() / name).string(); };
  const std::string worker = cli + " worker --coordinator 10.231.7.1:29500 --token-file " + token;
  const std::string script =
      servers.in_b(worker) + " 2>" + file("worker.err") + " & " +
      servers.in_a(cli + " launch --nprocs 2 --local-workers 1 --listen 10.231.7.1:29500 --token-file " + token + " " +
                   job + " --steps 10 -o " + file("run")) +
      " >" + file("out") + " 2>" + file("err") + "; status=$?; wait; exit $status";
  const int raw = std::system(("bash -c '" + std::regex_replace(script, std::regex("'"), "'\\''") + "'").c_str());
  const auto slurp = text_of;
  const std::string err = slurp(file("err"));
  BOOST_REQUIRE_MESSAGE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0, err + slurp(file("worker.err")));
  BOOST_TEST(contains(err, "starting 1 worker, waiting for 1 from elsewhere"), err);
  BOOST_TEST(contains(slurp(file("out")), "trained 10 steps"));
  BOOST_TEST(contains(slurp(file("worker.err")), "joined the coordinator at 10.231.7.1:29500"));
  BOOST_TEST(test::relative_difference(test::checkpoint_parameters(file("run") + "/checkpoint.pt", 2),
                                       test::single_process(*loaded, 10)) < 1e-5);
  // The batches went to the workers over the link: 10 steps of 16 samples of 12 floats.
  BOOST_TEST(servers.sent_by_a() > 10 * 16 * 12 * 4);
}

BOOST_AUTO_TEST_CASE(a_worker_that_ends_after_its_order_and_before_the_run_is_named_at_once) {
  // The coordinator and worker A sync with a Lua plugin's policy; worker B, without
  // that plugin on its search path, cannot set the plan it was sent to run and ends
  // after the gate gave it its order. The coordinator and worker A waited in the tensor
  // transport's join for c10d's timeout and said only "Socket Timeout"; the
  // coordinator names B as soon as it ends, and A ends as soon as the coordinator does.
  test::ScratchDir dir;
  const std::string job = job_file(dir, "gpipe");
  const std::string token = dir.write("token", std::string(40, 'k') + "\n");
  ::chmod(token.c_str(), 0600);
  std::string where;
  ::close(loopback_listener(where)); // a free port for the coordinator
  const std::string twins = (test::source_root() / "tests/lua_plugins/twins.lua").string();
  const char* before = std::getenv("ACTORPIPE_PLUGIN_PATH");
  const std::string kept = before ? before : "";
  ::setenv("ACTORPIPE_PLUGIN_PATH", twins.c_str(), 1); // for the two started here
  test::RunningCli coordinator({"launch", "--nprocs", "2", "--local-workers", "0", "--listen", where, "--token-file",
                                token, job, "--set", "plan.sync=\"lua-all\"", "--steps", "4", "-o",
                                (dir.path() / "run").string()});
  test::RunningCli a({"worker", "--coordinator", where, "--token-file", token});
  ::setenv("ACTORPIPE_PLUGIN_PATH", kept.c_str(), 1);
  BOOST_REQUIRE_MESSAGE(a.wait_for_line("joined the coordinator"), a.err);
  const auto b = test::run_cli("worker --coordinator " + where + " --token-file " + token); // without twins.lua
  BOOST_TEST(b.status == 2, b.err);
  BOOST_TEST(contains(b.err, "lua-all"), b.err);
  BOOST_TEST(coordinator.wait() == 1);
  BOOST_TEST(contains(coordinator.err, ") ended before the run began (its messages say why)"), coordinator.err);
  BOOST_TEST(!contains(coordinator.err, "Socket Timeout"), coordinator.err);
  BOOST_TEST(a.wait() == 1);
  BOOST_TEST(contains(a.err, "the coordinator at " + where + " ended before the run began"), a.err);
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
  const auto local = test::run_cli("launch --nprocs 2 --local-workers 3 " + job + out);
  BOOST_TEST(local.status == 2);
  BOOST_TEST(contains(local.err, "--local-workers 3: more than the run's 2 workers"), local.err);
  // An address that is none is said at once (it waited 30 s for an interrupted call).
  const auto unlistenable = test::run_cli("launch --nprocs 2 --listen 'not an address:0' " + job + out);
  BOOST_TEST(unlistenable.status == 2);
  BOOST_TEST(contains(unlistenable.err, "--listen not an address:0: cannot listen: no such address"), unlistenable.err);
  // A port another listener has is named too (it printed CAF's raw system_error).
  {
    auto taken = launch::listen_on({"127.0.0.1", 0});
    REQUIRE_OK(taken);
    sockaddr_in bound{};
    socklen_t size = sizeof bound;
    BOOST_REQUIRE(::getsockname(*taken, reinterpret_cast<sockaddr*>(&bound), &size) == 0);
    const std::string at = "127.0.0.1:" + std::to_string(ntohs(bound.sin_port));
    const auto busy = test::run_cli("launch --nprocs 2 --listen " + at + " " + job + out);
    ::close(*taken);
    BOOST_TEST(busy.status == 2);
    BOOST_TEST(contains(busy.err, "--listen " + at + ": cannot listen: Address already in use"), busy.err);
  }
  const auto tokenless = test::run_cli("launch --nprocs 2 --local-workers 1 --listen 127.0.0.1:29511 " + job + out);
  BOOST_TEST(tokenless.status == 2);
  BOOST_TEST(contains(tokenless.err, "need the job's token"), tokenless.err);
  const std::string token = dir.write("token", "a-token-long-enough-to-be-taken-0123\n");
  ::chmod(token.c_str(), 0600);
  const auto portless = test::run_cli("launch --nprocs 2 --local-workers 1 --token-file " + token + " " + job + out);
  BOOST_TEST(portless.status == 2);
  BOOST_TEST(contains(portless.err, "need a port to go to"), portless.err);
  const auto restart = test::run_cli("launch --nprocs 2 --local-workers 1 --listen 127.0.0.1:29511 --restart 1 " +
                                     std::string("--token-file ") + token + " " + job + out);
  BOOST_TEST(restart.status == 2);
  BOOST_TEST(contains(restart.err, "--restart 1: a restart starts only the workers started here"), restart.err);
  const auto hang_here = test::run_cli("run " + job + " --inject-failure 0:1:hang" + out);
  BOOST_TEST(hang_here.status == 2);
  BOOST_TEST(contains(hang_here.err, "found '0:1:hang'"), hang_here.err);
  const auto stall_before = test::run_cli("launch --nprocs 2 " + job + " --stall-timeout -1" + out);
  BOOST_TEST(stall_before.status == 2);
  BOOST_TEST(contains(stall_before.err, "--stall-timeout"), stall_before.err);
  const auto no_time = test::run_cli("launch --nprocs 2 " + job + " --heartbeat-timeout 0" + out);
  BOOST_TEST(no_time.status == 2);
  BOOST_TEST(contains(no_time.err, "--heartbeat-timeout"), no_time.err);
  const auto backwards =
      test::run_cli("worker --coordinator 127.0.0.1:1 --token-file " + token + " --cpus 3-1 --connect-timeout 1");
  BOOST_TEST(backwards.status == 2);
  BOOST_TEST(contains(backwards.err, "--cpus '3-1': the range '3-1' runs backwards"), backwards.err);
  const auto not_ours =
      test::run_cli("worker --coordinator 127.0.0.1:1 --token-file " + token + " --cpus 1023 --connect-timeout 1");
  BOOST_TEST(not_ours.status == 2);
  BOOST_TEST(contains(not_ours.err, "--cpus 1023: core 1023 is not one this process may run on"), not_ours.err);
  const auto bind_what = test::run_cli("launch --nprocs 2 --bind sockets " + job + out);
  BOOST_TEST(bind_what.status == 2);
  BOOST_TEST(contains(bind_what.err, "--bind"), bind_what.err);
  const auto nowhere = test::run_cli("worker --token-file " + dir.write("t", "x"));
  BOOST_TEST(nowhere.status == 2);
  BOOST_TEST(contains(nowhere.err, "no coordinator: give --coordinator HOST:PORT"), nowhere.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run"));
}
