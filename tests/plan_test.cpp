// Plans of the shipped configs: shape, estimates, JSON, and the planner's input checks.
#define BOOST_TEST_MODULE plan
#include <boost/test/unit_test.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/plan_report.hpp>
#include <actorpipe/simulator.hpp>
#include <actorpipe/tuning.hpp>

#include "test_support.hpp"
#include "generated_cases.hpp"
#include "synthetic_chain.hpp"

#include "common/autopipe/balanced_split.hpp"
#include "common/autopipe/cut_search.hpp"
#include "common/autopipe/finalist_judge.hpp"
#include "common/autopipe/latency_split.hpp"
#include "common/autopipe/pipeline_formula.hpp"
#include "common/autopipe/iteration_search.hpp"
#include "common/autopipe/send_aware_split.hpp"
#include "common/partitioning/split_programme.hpp"
#include "common/partitioning/unit_costs.hpp"
#include "planner/plan_wire.hpp"
#include "sim/stage_figures.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

using namespace actorpipe;
using test::contains;

namespace {

JobSpec job(const std::string& config, const std::vector<std::string>& overrides = {}) {
  auto spec = load_job((test::source_root() / "configs" / config).string(), overrides);
  REQUIRE_OK(spec);
  return *spec;
}

Plan plan(const JobSpec& spec) {
  auto result = make_plan(spec, test::plugins());
  REQUIRE_OK(result);
  return *result;
}

/// The cluster with every link unlimited: sends take no time.
ClusterSpec free_links(ClusterSpec cluster) {
  constexpr double unlimited = std::numeric_limits<double>::infinity();
  cluster.network = {unlimited, 0};
  for (Server& server : cluster.servers) {
    server.nic_bandwidth = server.inter_bridge_bandwidth = unlimited;
    for (PcieSwitch& sw : server.pcie_switches)
      sw.bandwidth = unlimited;
    for (HostBridge& bridge : server.host_bridges)
      bridge.bandwidth = unlimited;
  }
  return cluster;
}

/// A shipped cluster, by name.
ClusterSpec shipped_cluster(const std::string& name) {
  auto cluster = load_cluster((test::source_root() / "configs/clusters" / (name + ".toml")).string());
  REQUIRE_OK(cluster);
  return *cluster;
}

/// One of PipeDream's shipped profiles, read for a batch of 128 as the shipped jobs read them.
ModelProfile pipedream_profile(const std::string& name) {
  ProfileImportOptions options;
  options.batch_size = 128;
  auto profile = load_profile((test::source_root() / "configs/profiles/pipedream" / (name + ".txt")).string(), options);
  REQUIRE_OK(profile);
  return *profile;
}

/// A job of one pipeline of `stages` stages training the profile's batch in
/// `micro_batches` micro-batches.
JobSpec one_pipeline_job(const ModelProfile& profile, const ClusterSpec& cluster, std::uint32_t stages,
                         std::uint32_t micro_batches) {
  JobSpec spec;
  spec.file = "test";
  spec.job.name = profile.name;
  spec.profile = profile;
  spec.cluster = cluster;
  spec.plan.stages = stages;
  spec.plan.pipelines = 1;
  spec.plan.micro_batches = micro_batches;
  spec.train.batch_size = profile.batch_size;
  return spec;
}

double stage_parameters(const ModelProfile& p, std::size_t from, std::size_t to) {
  double sum = 0;
  for (std::size_t b = from; b < to; ++b)
    sum += static_cast<double>(p.blocks[b].parameter_bytes);
  return sum;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_shipped_config_plans) {
  for (const auto& entry : std::filesystem::directory_iterator(test::source_root() / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    BOOST_TEST_CONTEXT(entry.path().filename()) {
      const JobSpec spec = job(entry.path().filename().string());
      // A zoo model without a profile file is measured by the command that runs it
      // (runtime_test covers those jobs).
      if (spec.profile.blocks.empty() && spec.model.zoo != ZooModel::none) continue;
      const Plan p = plan(spec);
      // The shape asked for, a schedule for every stage, and a time the simulator
      // predicted for it.
      if (spec.plan.stages != auto_count) BOOST_TEST(p.stages.size() == spec.plan.stages);
      BOOST_TEST(p.schedule.stages.size() == p.stages.size());
      BOOST_TEST(p.devices.size() == p.pipelines);
      BOOST_TEST((std::isfinite(p.iteration_time_ms) && p.iteration_time_ms > 0), p.iteration_time_ms);
    }
  }
}

BOOST_AUTO_TEST_CASE(uniform_on_vgg16_cuts_equal_block_counts) {
  const JobSpec spec = job("vgg16-4dev.toml");
  const Plan p = plan(spec);
  BOOST_REQUIRE(p.stages.size() == 4u);
  for (std::size_t s = 0; s < 4; ++s) {
    BOOST_TEST(first_block(p.stages[s]) == 10 * s);
    BOOST_TEST(last_block(p.stages[s]) == 10 * s + 9);
    BOOST_TEST(p.devices[0][s] == s);
  }
  // Stage 0 holds the high-resolution convolutions: the slowest stage.
  BOOST_TEST(p.stages[0].estimate.compute_ms > p.stages[3].estimate.compute_ms);
  // Compute per micro-batch: the profile's times scaled from batch 128 to 16 samples.
  double forward = 0, backward = 0;
  for (std::size_t b = 0; b < 10; ++b) {
    forward += spec.profile.blocks[b].forward_ms;
    backward += spec.profile.blocks[b].backward_ms;
  }
  // Each forward and backward also pays the fixed per-action overhead.
  BOOST_TEST(p.stages[0].estimate.compute_ms == (forward + backward) * 16 / 128 + 2 * spec.plan.action_overhead_ms,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(parameters_balances_parameter_bytes_exactly) {
  const JobSpec uniform_job = job("vgg16-4dev.toml");
  const JobSpec parameters_job = job("vgg16-4dev.toml", {"plan.partitioner=parameters"});
  const Plan uniform = plan(uniform_job);
  const Plan balanced = plan(parameters_job);
  BOOST_TEST(balanced.parameter_balance < uniform.parameter_balance);
  bool different = false;
  for (std::size_t s = 0; s < 4; ++s)
    different = different || !(balanced.stages[s].end == uniform.stages[s].end);
  BOOST_TEST(different);

  // Brute force over every 4-stage split of the 40 blocks: none has a smaller largest stage.
  const ModelProfile& profile = parameters_job.profile;
  const std::size_t n = profile.blocks.size();
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t a = 1; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      for (std::size_t c = b + 1; c < n; ++c)
        best = std::min(best, std::max({stage_parameters(profile, 0, a), stage_parameters(profile, a, b),
                                        stage_parameters(profile, b, c), stage_parameters(profile, c, n)}));
  double largest = 0;
  for (const StagePlan& stage : balanced.stages)
    largest = std::max(largest, stage_parameters(profile, stage.begin.block, stage.end.block));
  BOOST_TEST(largest == best);
}

BOOST_AUTO_TEST_CASE(pipelines_get_distinct_devices_and_equal_shares) {
  const JobSpec spec = job("resnet50-hetero-2x8.toml", {"plan.partitioner=uniform", "plan.mapper=sequential",
                                                        "plan.stages=8", "plan.pipelines=2", "plan.micro_batches=16"});
  const Plan p = plan(spec);
  BOOST_TEST(p.pipelines == 2u);
  BOOST_TEST(p.stages.size() == 8u);
  BOOST_TEST(p.schedule.micro_batch_sizes.size() == 16u);
  BOOST_TEST(std::all_of(p.schedule.micro_batch_sizes.begin(), p.schedule.micro_batch_sizes.end(),
                         [](auto m) { return m == 8u; }));
  // Sequential: pipeline 1 lands on the slow server, so its speed bounds each stage.
  BOOST_TEST(spec.cluster.devices[p.devices[1][0]].name == "slow/gpu0");
  double forward = 0;
  for (Cut at = p.stages[0].begin; at < p.stages[0].end; ++at.block)
    forward += spec.profile.blocks[at.block].forward_ms;
  BOOST_TEST(p.stages[0].estimate.forward_ms == forward * 8 / 128 / 0.55 + spec.plan.action_overhead_ms,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(plan_json_has_the_documented_fields) {
  const JobSpec spec = job("vgg16-4dev.toml");
  const Plan p = plan(spec);
  const auto json = nlohmann::json::parse(plan_to_json(p, spec.profile, spec.cluster));
  for (const char* key : {"model", "cluster", "partitioner", "mapper", "schedule", "sync", "pipelines", "micro_batches",
                          "micro_batch_sizes", "balance", "parameter_balance", "search_ms", "stages"})
    BOOST_TEST(json.contains(key), key);
  BOOST_REQUIRE(json["stages"].size() == 4u);
  for (const char* key : {"index", "first_block", "last_block", "device", "devices", "compute_ms", "parameter_bytes",
                          "activation_bytes", "memory_bytes"})
    BOOST_TEST(json["stages"][0].contains(key), key);
  BOOST_TEST(json["stages"][3]["last_block"] == 39);
  BOOST_TEST(json["stages"][1]["device"] == "node/gpu1");
  BOOST_TEST(json["balance"].get<double>() == p.balance);

  const std::string table = format_plan(p, spec.profile, spec.cluster);
  BOOST_TEST(contains(table, "compute ms"));
  BOOST_TEST(contains(table, "node/gpu3"));
  BOOST_TEST(contains(table, "balance"));
}

BOOST_AUTO_TEST_CASE(a_plan_crosses_to_a_worker_as_text_that_reads_back_equal) {
  // What a launch's workers run instead of planning again: every field, numbers and
  // the schedule as they were; damage is named, not taken.
  for (const auto& [config, overrides] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"vgg16-4dev.toml", {}},
           {"resnet50-hetero-2x8.toml", {}},
           {"vgg16-4dev.toml", {"plan.scheduler=\"gpipe\"", "plan.sync=\"parameter-server\""}}})
    BOOST_TEST_CONTEXT(config) {
      const JobSpec spec = job(config, overrides);
      const Plan original = plan(spec);
      const std::string text = planner::plan_to_wire(original);
      auto back = planner::plan_from_wire(text);
      REQUIRE_OK(back);
      BOOST_TEST(planner::plan_to_wire(*back) == text);
      BOOST_TEST(plan_to_json(*back, spec.profile, spec.cluster) == plan_to_json(original, spec.profile, spec.cluster));
      BOOST_TEST((back->schedule.stages == original.schedule.stages));
      BOOST_TEST(back->schedule.name == original.schedule.name);
      BOOST_TEST((back->devices == original.devices));
      BOOST_TEST(back->stepping.staleness == original.stepping.staleness);
      BOOST_TEST(back->stages.back().estimate.workspace_bytes == original.stages.back().estimate.workspace_bytes);
      BOOST_TEST(back->iteration_time_ms == original.iteration_time_ms); // exactly
      REQUIRE_OK(back->validate(spec.profile, spec.cluster));

      auto cut_short = planner::plan_from_wire(text.substr(0, text.size() / 2));
      BOOST_REQUIRE(!cut_short);
      BOOST_TEST(contains(cut_short.error().message, "not a plan's text"), cut_short.error().message);
      auto document = nlohmann::json::parse(text);
      document["pipelines"] = "two";
      auto wrong = planner::plan_from_wire(document.dump());
      BOOST_REQUIRE(!wrong);
      BOOST_TEST(contains(wrong.error().message, "field 'pipelines'"), wrong.error().message);
      document = nlohmann::json::parse(text);
      document["schedule"] = "micro_batch_sizes = [1]\nstages = [\"F0\"]\n";
      BOOST_TEST(!planner::plan_from_wire(document.dump()));
    }
}

BOOST_AUTO_TEST_CASE(impossible_shapes_are_bad_input_naming_the_key) {
  auto too_many = make_plan(job("vgg16-4dev.toml", {"plan.stages=3", "plan.pipelines=2"}), test::plugins());
  BOOST_REQUIRE(!too_many.ok());
  BOOST_TEST(exit_status(too_many.error().code) == 2);
  BOOST_TEST(contains(too_many.error().message,
                      "plan.stages: 3 stages × 2 pipelines need 6 devices; cluster '4dev-one-server' has 4"),
             too_many.error().message);

  auto uneven =
      make_plan(job("vgg16-4dev.toml", {"plan.stages=2", "plan.pipelines=2", "train.batch_size=127"}), test::plugins());
  BOOST_REQUIRE(!uneven.ok());
  BOOST_TEST(contains(uneven.error().message, "train.batch_size: 127 samples do not split evenly over 2 pipelines"),
             uneven.error().message);

  auto tiny = make_plan(job("vgg16-4dev.toml", {"train.batch_size=4"}), test::plugins());
  BOOST_REQUIRE(!tiny.ok());
  BOOST_TEST(contains(tiny.error().message, "plan.micro_batches: 8 micro-batches need at least as many samples"),
             tiny.error().message);
}

BOOST_AUTO_TEST_CASE(a_sync_policy_is_a_plugin_checked_when_planning) {
  auto unknown = make_plan(job("vgg16-4dev.toml", {"plan.sync=\"elastik\""}), test::plugins());
  BOOST_REQUIRE(!unknown.ok());
  BOOST_TEST(exit_status(unknown.error().code) == 2);
  BOOST_TEST(contains(unknown.error().message, "plan.sync: no sync named 'elastik', did you mean 'elastic'? (found: "
                                               "ad-psgd, allreduce, average, elastic, parameter-server, sdpipe)"),
             unknown.error().message);
  // Settings for a plugin that is nowhere were silently ignored: named, with the nearest.
  auto nowhere = make_plan(job("vgg16-4dev.toml", {"plan.options.elastik.alpha=0.5"}), test::plugins());
  BOOST_REQUIRE(!nowhere.ok());
  BOOST_TEST(exit_status(nowhere.error().code) == 2);
  BOOST_TEST(
      contains(nowhere.error().message, "plan.options.elastik: no plugin is called 'elastik', did you mean 'elastic'?"),
      nowhere.error().message);
  // Its options are checked now, placed at the key, not at a run's first step.
  auto refused =
      make_plan(job("vgg16-4dev.toml", {"plan.sync=\"elastic\"", "plan.options.elastic.alpha=2"}), test::plugins());
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(contains(refused.error().message, "plan.options.elastic.alpha: sync 'elastic'"), refused.error().message);
  BOOST_TEST(contains(refused.error().message, "option 'alpha': 2 is outside"), refused.error().message);
  // Above 1 / pipelines a round of all pipelines would overshoot; a pipeline moving alone
  // with the centre may go up to 1.
  const std::vector<std::string> pair{"plan.sync=\"elastic\"", "plan.pipelines=2", "plan.stages=2",
                                      "plan.options.elastic.alpha=0.9"};
  auto overshooting = make_plan(job("vgg16-4dev.toml", pair), test::plugins());
  BOOST_REQUIRE(!overshooting.ok());
  // The value and the bounds as written, not as printf or TOML++'s round trip would.
  BOOST_TEST(contains(overshooting.error().message, "option 'alpha': 0.9 is outside [1e-09, 0.5]"),
             overshooting.error().message);
  std::vector<std::string> alone = pair;
  alone.push_back("plan.options.elastic.asynchronous=true");
  REQUIRE_OK(make_plan(job("vgg16-4dev.toml", alone), test::plugins()));
  // sdpipe's windows must nest, and its counts (and a parameter server's staleness)
  // be whole numbers.
  for (const auto& [policy, option, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"sdpipe", "plan.options.sdpipe.window_ms=20", "option 'window_ms': 20 is outside"},
           {"sdpipe", "plan.options.sdpipe.force_every=2.5", "option 'force_every': 2.5 is not a whole number"},
           {"sdpipe", "plan.options.sdpipe.overlap=\"yes\"", "option 'overlap': 'yes' is not one of true, false"},
           {"elastic", "plan.options.elastic.asynchronous=1", "option 'asynchronous': '1' is not one of true, false"},
           {"parameter-server", "plan.options.parameter-server.staleness=-1", "option 'staleness': -1 is outside"}}) {
    auto bad = make_plan(job("vgg16-4dev.toml", {"plan.sync=\"" + policy + "\"", option}), test::plugins());
    BOOST_REQUIRE(!bad.ok());
    BOOST_TEST(exit_status(bad.error().code) == 2);
    BOOST_TEST(contains(bad.error().message, "sync '" + policy + "'"), bad.error().message);
    BOOST_TEST(contains(bad.error().message, message), bad.error().message);
  }
  auto planned = make_plan(job("vgg16-4dev.toml", {"plan.sync=\"average\""}), test::plugins());
  REQUIRE_OK(planned);
  BOOST_TEST(planned->sync == "average");
}

BOOST_AUTO_TEST_CASE(the_plan_says_how_its_sync_policy_lets_pipelines_step) {
  // What the simulator needs of the policy, from its round 0: whether pipelines wait for
  // each other every step, and a parameter server's bound.
  for (const auto& [keys, asynchronous, staleness] :
       std::vector<std::tuple<std::vector<std::string>, bool, std::uint64_t>>{
           {{"plan.sync=\"allreduce\""}, false, SyncStepping::unbounded},
           {{"plan.sync=\"elastic\""}, false, SyncStepping::unbounded},
           {{"plan.sync=\"ad-psgd\""}, false, SyncStepping::unbounded},
           {{"plan.sync=\"sdpipe\""}, true, SyncStepping::unbounded},
           {{"plan.sync=\"elastic\"", "plan.options.elastic.asynchronous=true"}, true, SyncStepping::unbounded},
           {{"plan.sync=\"parameter-server\""}, true, 2},
           {{"plan.sync=\"parameter-server\"", "plan.options.parameter-server.staleness=0"}, true, 0},
           {{"plan.sync=\"parameter-server\"", "plan.options.parameter-server.staleness=\"none\""},
            true,
            SyncStepping::unbounded}}) {
    auto planned = make_plan(job("vgg16-4dev.toml", keys), test::plugins());
    REQUIRE_OK(planned);
    BOOST_TEST(planned->stepping.asynchronous == asynchronous, keys.back());
    BOOST_TEST(planned->stepping.staleness == staleness, keys.back());
  }
}

BOOST_AUTO_TEST_CASE(a_plan_whose_pipelines_step_alone_is_judged_over_enough_steps_to_drift_apart) {
  // 16 data-parallel pipelines on two generations of GPUs. In lockstep all go at the
  // slowest pace, and pay an all-reduce; stepping alone, the faster ones take more of
  // the data, which one simulated step would not show (every pipeline takes one part).
  const std::vector<std::string> shape{"plan.stages=1", "plan.pipelines=16", "plan.micro_batches=4"};
  auto keys = [&](const char* sync) {
    std::vector<std::string> all = shape;
    all.push_back(std::string("plan.sync=\"") + sync + "\"");
    return all;
  };
  const JobSpec alone = job("resnet50-hetero-2x8.toml", keys("sdpipe"));
  const Plan planned = plan(alone);
  const Plan lockstep = plan(job("resnet50-hetero-2x8.toml", keys("allreduce")));
  SimulationOptions options;
  auto one_step = simulate(planned, alone.profile, alone.cluster, options);
  REQUIRE_OK(one_step);
  BOOST_TEST(planned.samples_per_s > 1.2 * one_step->samples_per_s);
  BOOST_TEST(planned.samples_per_s > 1.5 * lockstep.samples_per_s);
}

namespace {

/// A random chain of `blocks` blocks, each with two sub-blocks.
ModelProfile random_profile(std::mt19937& random, std::size_t blocks) {
  std::uniform_real_distribution<double> time(0.2, 5.0);
  ModelProfile p;
  p.name = "random";
  p.batch_size = 4;
  for (std::size_t b = 0; b < blocks; ++b) {
    Block block;
    block.name = "b" + std::to_string(b);
    for (const char* half : {"attention", "mlp"}) {
      SubBlock sub{half, time(random), time(random), 1000, 1000, 10};
      block.sub_blocks.push_back(sub);
      block.add(sub);
    }
    p.blocks.push_back(block);
  }
  return p;
}

/// The largest stage's forward + backward under `partition`.
double largest_stage(const std::vector<Unit>& units, const Partition& partition) {
  double largest = 0;
  for (std::size_t s = 0; s + 1 < partition.cuts.size(); ++s) {
    double stage = 0;
    for (const Unit& u : units)
      if (!(u.begin < partition.cuts[s]) && u.begin < partition.cuts[s + 1]) stage += u.forward_ms + u.backward_ms;
    largest = std::max(largest, stage);
  }
  return largest;
}

/// The least largest stage (forward + backward) over every split of `units` into
/// `stages`, by trying them all.
double brute_force_min_max(const std::vector<Unit>& units, std::size_t stages) {
  std::vector<double> cost;
  for (const Unit& u : units)
    cost.push_back(u.forward_ms + u.backward_ms);
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> cuts(stages - 1);
  std::function<void(std::size_t, std::size_t, double, double)> place = [&](std::size_t k, std::size_t from,
                                                                            double largest, double) {
    if (k == stages - 1) {
      double last = 0;
      for (std::size_t u = from; u < units.size(); ++u)
        last += cost[u];
      best = std::min(best, std::max(largest, last));
      return;
    }
    double stage = 0;
    for (std::size_t end = from + 1; end + (stages - 1 - k) <= units.size(); ++end) {
      stage += cost[end - 1];
      place(k + 1, end, std::max(largest, stage), 0);
    }
  };
  place(0, 0, 0, 0);
  return best;
}

} // namespace

BOOST_AUTO_TEST_CASE(where_sends_are_free_autopipe_is_the_exact_min_max_partition) {
  auto autopipe = test::plugins().partitioner("autopipe");
  BOOST_REQUIRE(autopipe.ok());
  std::mt19937 random(42);
  const ClusterSpec cluster = free_links(job("vgg16-4dev.toml").cluster);
  BOOST_REQUIRE(cluster.validate().ok());
  for (int trial = 0; trial < 40; ++trial) {
    const ModelProfile profile = random_profile(random, 3 + trial % 5);
    const std::size_t stages = 2 + trial % 3;
    const std::vector<Unit> units = profile.units(true);
    PlanContext context{.profile = profile, .cluster = cluster};
    context.stages = stages;
    context.micro_batch_sizes = std::vector<std::uint32_t>(8, 4);
    context.scheduler = "1f1b";
    auto partition = (*autopipe)->partition(context);
    REQUIRE_OK(partition);
    const double largest = largest_stage(units, *partition);
    const double optimum = brute_force_min_max(units, stages);
    BOOST_TEST_CONTEXT("trial " << trial << ": " << units.size() << " units, " << stages << " stages") {
      BOOST_TEST(largest <= optimum + 1e-9);
      BOOST_TEST(largest >= optimum - 1e-9);
    }
  }
}

BOOST_AUTO_TEST_CASE(autopipe_cuts_inside_the_gpt2_head_where_block_planners_cannot) {
  // GPT-2 XL's head is worth about 2.4 layers; only its vocabulary slices let 32
  // stages come near an even share.
  auto profile = load_profile((test::source_root() / "configs/profiles/gpt2-xl.toml").string());
  BOOST_REQUIRE(profile.ok());
  const std::vector<Unit> units = profile->units(true);
  // Free links, so that balance alone decides.
  auto homo = load_cluster((test::source_root() / "configs/clusters/homo-64.toml").string());
  REQUIRE_OK(homo);
  const ClusterSpec cluster = free_links(*homo);
  PlanContext context{.profile = *profile, .cluster = cluster};
  context.stages = 32;
  context.micro_batch_sizes = std::vector<std::uint32_t>(64, profile->batch_size);
  context.scheduler = "1f1b";
  std::map<std::string, double> largest;
  for (const char* name : {"autopipe", "dapple", "piper"}) {
    auto partitioner = test::plugins().partitioner(name);
    BOOST_REQUIRE(partitioner.ok());
    auto partition = (*partitioner)->partition(context);
    BOOST_REQUIRE_MESSAGE(partition.ok(), name << ": " << (partition.ok() ? "" : partition.error().message));
    largest[name] = largest_stage(units, *partition);
  }
  double head = 0;
  for (const SubBlock& sub : profile->blocks.back().sub_blocks)
    head += sub.forward_ms + sub.backward_ms;
  BOOST_TEST(largest["autopipe"] < head);
  BOOST_TEST(largest["autopipe"] < 0.9 * largest["dapple"]);
  BOOST_TEST(largest["autopipe"] < 0.9 * largest["piper"]);
}

BOOST_AUTO_TEST_CASE(autopipe_and_hetero_are_never_slower_than_dapple_piper_or_uniform_on_vgg16) {
  // VGG-16's early activations are large: cuts that balance compute but send them
  // cost more than the balance saves. One pipeline, as the issue's table had it.
  for (const char* cluster : {"homo-64", "mix-4x8-3gen"})
    for (const char* stages : {"4", "8"}) {
      const std::string file = (test::source_root() / "configs/clusters" / (std::string(cluster) + ".toml")).string();
      const std::vector<std::string> shape = {"cluster=\"" + file + "\"", std::string("plan.stages=") + stages,
                                              "plan.pipelines=1", "plan.micro_batches=8"};
      auto with = [&](const std::string& partitioner, const std::string& mapper) {
        std::vector<std::string> overrides = shape;
        overrides.push_back("plan.partitioner=" + partitioner);
        overrides.push_back("plan.mapper=" + mapper);
        return plan(job("vgg16-4dev.toml", overrides)).iteration_time_ms;
      };
      const double ours = with("autopipe", "hetero");
      for (const char* baseline : {"dapple", "piper", "uniform"})
        for (const char* mapper : {"sequential", "hetero"})
          BOOST_TEST_CONTEXT(cluster << ", " << stages << " stages: " << baseline << " + " << mapper) {
            BOOST_TEST(ours <= with(baseline, mapper) * (1 + 1e-9));
          }
    }
}

namespace {

/// One of PipeDream's shipped profiles (batch 128) on a shipped cluster in `stages`
/// stages of `pipelines` pipelines of `micro_batches` each (the profile's batch per
/// pipeline): autopipe + hetero plans it no slower than any other partitioner on each
/// of `mappers`.
void never_slower(const std::string& model, const std::string& cluster, int stages, int pipelines, int micro_batches,
                  const std::vector<std::string>& mappers = {"hetero"}) {
  const std::string file = (test::source_root() / "configs/clusters" / (cluster + ".toml")).string();
  const std::string profile = (test::source_root() / "configs/profiles/pipedream" / (model + ".txt")).string();
  auto with = [&](const std::string& partitioner, const std::string& mapper) {
    return plan(job("vgg16-4dev.toml",
                    {"model.profile=\"" + profile + "\"", "cluster=\"" + file + "\"",
                     "plan.stages=" + std::to_string(stages), "plan.pipelines=" + std::to_string(pipelines),
                     "plan.micro_batches=" + std::to_string(micro_batches),
                     "train.batch_size=" + std::to_string(128 * pipelines), "plan.partitioner=" + partitioner,
                     "plan.mapper=" + mapper}))
        .iteration_time_ms;
  };
  const double ours = with("autopipe", "hetero");
  for (const std::string& mapper : mappers)
    for (const char* baseline : {"dapple", "piper", "pipedream", "uniform"})
      BOOST_TEST_CONTEXT(model << " on " << cluster << ", " << stages << " stages × " << pipelines << " × "
                               << micro_batches << ", against " << baseline << " + " << mapper) {
        BOOST_TEST(ours <= with(baseline, mapper) * (1 + 1e-9));
      }
}

/// autopipe + hetero plans `spec` at least as fast as every other partitioner does with
/// hetero.
void never_slower_than_any_partitioner(JobSpec spec) {
  auto with = [&](const std::string& partitioner) {
    spec.plan.partitioner = partitioner;
    spec.plan.mapper = "hetero";
    return plan(spec).iteration_time_ms;
  };
  const double ours = with("autopipe");
  for (const char* baseline : {"parameters", "dapple", "piper", "pipedream", "uniform"})
    BOOST_TEST_CONTEXT("against " << baseline) { BOOST_TEST(ours <= with(baseline) * (1 + 1e-9)); }
}

} // namespace

BOOST_AUTO_TEST_CASE(where_the_judge_overturns_the_estimate_the_winner_settles_on_the_judge) {
  // 32 stages of VGG-16 in two pipelines of 32 micro-batches on homo-64: the estimate
  // prices the micro-batches past its eighth at the period and misjudges these splits
  // by 4–13%. Every micro-batch simulated, the split where a descent stalled before it
  // moved a cut to another stage beats where the move led, and DAPPLE's cuts, four of
  // them a block earlier than the stall's, are faster still: only a descent on the
  // judge reaches them (0.45%).
  never_slower("vgg16", "homo-64", 32, 2, 32);
}

BOOST_AUTO_TEST_CASE(a_descent_merges_two_stages_to_keep_the_widest_activations_in_one) {
  // 32 stages of VGG-16 in 312 pipelines on datacenter-10k: its first blocks send
  // hundreds of megabytes a micro-batch, and one stage that holds them all, with one
  // more cut further on, beats every split that cuts them (2.9% faster than where the
  // descent stopped by single cuts and units handed on).
  never_slower("vgg16", "datacenter-10k", 32, 312, 8);
}

BOOST_AUTO_TEST_CASE(where_the_heaviest_stage_is_one_unit_a_descent_hands_on_work_from_the_next) {
  // 32 stages of VGG-16 in 312 pipelines of 32 micro-batches on datacenter-10k: the
  // descent stalls with a single unit as its heaviest stage, nothing to hand on, and
  // single cuts on a plateau. Two units handed from the fifth stage to the ninth (DAPPLE's
  // split) are 0.16% faster.
  never_slower("vgg16", "datacenter-10k", 32, 312, 32);
}

BOOST_AUTO_TEST_CASE(where_the_lanes_bind_one_pipeline_the_finalists_are_judged_past_the_period) {
  // 24 stages of VGG-16 in one pipeline of 32 micro-batches on pairs-4x8, whose PCIe
  // switches and NICs carry several of its cuts: the closed form and the period both
  // price the split they rank first at 207 ms, which simulates to 272 ms. The
  // finalists' judge extrapolates from 8 and 16 micro-batches simulated, and a descent
  // that can merge two stages reaches a split faster than PipeDream's (223 ms).
  never_slower("vgg16", "pairs-4x8", 24, 1, 32);
}

BOOST_AUTO_TEST_CASE(where_speeds_differ_a_descent_sets_out_from_the_split_blind_to_them) {
  // 12 stages of GNMT in two pipelines of 8 micro-batches on mix-4x8-3gen: the rings
  // outlast the compute (stages mostly bubble), and the descents from the splits that
  // balance compute by speed stall 0.5% behind DAPPLE's cuts; one from the split that
  // weighs every device alike ends 2.2% ahead of them.
  never_slower("gnmt", "mix-4x8-3gen", 12, 2, 8);
}

BOOST_AUTO_TEST_CASE(where_the_mapper_has_placed_the_stages_a_descent_sets_out_from_a_third_start) {
  // 20 stages of GNMT in 500 pipelines of 8 micro-batches on datacenter-10k: the
  // descents from the two best starts by the estimate stop 0.16% behind DAPPLE's cuts;
  // the one from the third passes them.
  never_slower("gnmt", "datacenter-10k", 20, 500, 8);
}

BOOST_AUTO_TEST_CASE(a_last_descent_from_the_best_candidate_can_relocate_any_cut) {
  // 12 stages of ResNet-50 in five pipelines of one micro-batch on homo-64: DAPPLE's
  // cuts are one relocation from the best candidate, of a cut that sends too little
  // to be among the two that every descent tries elsewhere.
  never_slower("resnet50", "homo-64", 12, 5, 1);
}

BOOST_AUTO_TEST_CASE(at_one_micro_batch_the_split_that_balances_the_rings_alone_is_judged) {
  // 20 stages of GPT-2 XL in three pipelines of one micro-batch on homo-64: every
  // split computes the same in all, and the parameters partitioner's, which balances
  // the rings and steps alone, is 0.16% faster than where the descents lead.
  const std::string cluster = (test::source_root() / "configs/clusters/homo-64.toml").string();
  auto with = [&](const std::string& partitioner) {
    return plan(job("gpt2-xl-hetero-2x8.toml",
                    {"cluster=\"" + cluster + "\"", "plan.stages=20", "plan.pipelines=3", "plan.micro_batches=1",
                     "train.batch_size=24", "plan.partitioner=" + partitioner, "plan.mapper=hetero"}))
        .iteration_time_ms;
  };
  BOOST_TEST(with("autopipe") <= with("parameters") * (1 + 1e-9));
}

BOOST_AUTO_TEST_CASE(where_representatives_or_a_pod_judged_the_best_few_are_simulated_in_full) {
  // 6 stages of VGG-16 in 1,666 pipelines of 32 micro-batches on datacenter-10k: the
  // representatives, in lockstep with the pipelines they stand for, judge a split
  // whose rings meet at shared NICs 8% short, and ranked first it falls behind Piper's
  // cuts on the sequential layout.
  never_slower("vgg16", "datacenter-10k", 6, 1666, 32, {"hetero", "sequential"});
  // 20 stages of AlexNet in 500 pipelines: the estimate's best, DAPPLE's cuts, judged
  // behind the judge's own best, runs 1.7% ahead of it.
  never_slower("alexnet", "datacenter-10k", 20, 500, 32);
}

BOOST_AUTO_TEST_CASE(where_stages_outnumber_the_micro_batches_a_descent_sets_out_with_the_last_stages_larger) {
  // 64 stages of a generated 75-block graph (the planner grid's held-out seed 60) in
  // one pipeline of 8 micro-batches on homo-64: eleven stages hold two blocks. The
  // descents from the starts that put them first or spread them stop 2.5% behind the
  // parameters partitioner's split, which puts most of them last; from equal counts
  // with the last stages larger, one passes it.
  never_slower_than_any_partitioner(
      one_pipeline_job(bench::generated_graph(60, 75), shipped_cluster("homo-64"), 64, 8));
}

BOOST_AUTO_TEST_CASE(the_last_descent_on_the_closed_form_hands_units_on_from_below_the_heaviest_stage) {
  // 8 stages of a generated 183-block chain (the planner grid's held-out seed 83) in
  // one pipeline of 8 micro-batches on the cluster drawn from the same seed: the
  // descents, moving a cut at a time or handing a unit on from the heaviest stage
  // alone, stall 0.8% behind PipeDream's split; handing units on from any of the four
  // heaviest, the best candidate passes it.
  const ModelProfile chain = bench::generated_chain(83, 183);
  BOOST_TEST_REQUIRE(chain.name == "chain-183-s83");
  never_slower_than_any_partitioner(one_pipeline_job(chain, bench::generated_cluster(83, 64), 8, 8));
}

BOOST_AUTO_TEST_CASE(where_the_last_descent_on_the_closed_form_wins_its_split_settles_too) {
  // 8 stages of a generated 150-block chain (held-out seed 49) in one pipeline of 8
  // micro-batches: the closed form misjudges its splits, and the judge's winner,
  // settled on the simulation, plans 3.4% ahead of DAPPLE's cuts. The closed form's
  // last descent finds a split it ranks above every other, which the judge chooses too:
  // ranked first among the finalists, it went unsettled and tied with DAPPLE's.
  const ModelProfile chain = bench::generated_chain(49, 150);
  BOOST_TEST_REQUIRE(chain.name == "chain-150-s49");
  JobSpec spec = one_pipeline_job(chain, bench::generated_cluster(49, 64), 8, 8);
  spec.plan.mapper = "hetero";
  spec.plan.partitioner = "autopipe";
  const double ours = plan(spec).iteration_time_ms;
  spec.plan.partitioner = "dapple";
  BOOST_TEST(ours < plan(spec).iteration_time_ms * 0.99);
}

BOOST_AUTO_TEST_CASE(the_judge_sees_several_estimates_not_one_plateau) {
  // 4 stages of AlexNet in 2,500 pipelines of 8 micro-batches on datacenter-10k: six
  // splits, which differ only in where blocks of no compute fall, tie first by the
  // estimate. Judged alone, they leave out the fourth estimate, 2.7% behind the first:
  // Piper's cuts, 0.06% ahead of it in full, and a cut from a split 0.1% ahead.
  never_slower("alexnet", "datacenter-10k", 4, 2500, 8);
}

BOOST_AUTO_TEST_CASE(where_the_lanes_bind_every_split_is_ranked_past_the_period_too) {
  // 20 stages of AlexNet's 22 blocks in one pipeline of 32 micro-batches on
  // mix-4x8-3gen: its early activations crowd the PCIe switches, and the estimate,
  // which prices the micro-batches past its eighth at the period, ranks its 210 splits
  // 14% short and Piper's cuts 28th, out of the judge's reach. Ranked again by what
  // 8 and 16 micro-batches simulated extrapolate to, where that is more, they are
  // among the six judged.
  never_slower("alexnet", "mix-4x8-3gen", 20, 1, 32);
}

BOOST_AUTO_TEST_CASE(on_schedules_too_long_to_simulate_per_candidate_autopipe_still_weighs_the_sends) {
  // 32 stages of 64 micro-batches: each estimate would simulate 4,096 actions, so the
  // cuts are chosen by the pipeline latency; VGG-16's large early activations must
  // still make that choice beat the compute-only balance, and match DAPPLE's within
  // the grid benchmark's 0.5%.
  const std::string cluster = (test::source_root() / "configs/clusters/homo-64.toml").string();
  auto with = [&](const std::string& partitioner, std::vector<std::string> extra = {}) {
    std::vector<std::string> overrides = {
        "cluster=\"" + cluster + "\"", "plan.stages=32",       "plan.pipelines=1",
        "plan.micro_batches=64",       "train.batch_size=128", "plan.partitioner=" + partitioner,
        "plan.mapper=sequential"};
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return plan(job("vgg16-4dev.toml", overrides)).iteration_time_ms;
  };
  const double ours = with("autopipe");
  const double balanced = with("autopipe", {"plan.options.autopipe.search=false"});
  BOOST_TEST(ours < balanced, ours << " " << balanced);
  BOOST_TEST(ours <= with("dapple") * 1.005);
}

BOOST_AUTO_TEST_CASE(the_split_sweeps_find_what_trying_every_split_finds) {
  // LatencySplit's shortest path under a bound and SendAwareSplit's least largest stage
  // share one sweep (stage_sweep.hpp) of only the ends that the stages before reach and
  // the stages after can finish from (stage_ends.hpp; at the least bound, with no slack
  // but its rounding): on random small chains, with uneven speeds, sends and memory,
  // they find what trying every split finds.
  std::mt19937 random(47);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const ModelProfile profile = random_profile(random, 2 + trial % 6);
    const partitioning::UnitCosts costs(profile, true, profile.batch_size);
    const std::size_t N = costs.size(), S = 2 + static_cast<std::size_t>(trial) % std::min<std::size_t>(3, N - 1);
    std::vector<double> slowness(S);
    std::vector<std::size_t> most_units(S);
    std::vector<std::vector<double>> sends(S, std::vector<double>(N + 1));
    for (std::size_t s = 0; s < S; ++s) {
      slowness[s] = 0.5 + 1.5 * uniform(random);
      // Some stages hold few units: some chains fit no split at all.
      most_units[s] = 1 + static_cast<std::size_t>(uniform(random) * static_cast<double>(N));
      for (double& send : sends[s])
        send = 3 * uniform(random);
    }
    auto slow = [&](std::size_t s) { return slowness[s]; };
    auto fits = [&](std::size_t s, std::size_t i, std::size_t j) { return j - i <= most_units[s]; };
    auto send = [&](std::size_t s, std::size_t i) { return sends[s][i]; };
    auto sync = [&](std::size_t j) { return 0.1 * static_cast<double>(j); };
    const auto w = [&](const std::vector<std::size_t>& b, std::size_t s) {
      return costs.compute_ms(b[s], b[s + 1]) * slowness[s];
    };
    std::vector<std::vector<std::size_t>> splits;
    autopipe::for_each_split(N, S, fits, [&](const std::vector<std::size_t>& b) { splits.push_back(b); });
    const auto listed = [&](const std::vector<std::size_t>& b) {
      return std::find(splits.begin(), splits.end(), b) != splits.end();
    };

    autopipe::LatencySplit latency(costs, S, 8, slow, fits, send, sync);
    double least_max = std::numeric_limits<double>::infinity();
    for (const auto& b : splits) {
      double most = 0;
      for (std::size_t s = 0; s < S; ++s)
        most = std::max(most, w(b, s));
      least_max = std::min(least_max, most);
    }
    for (const double bound : {least_max * 0.9, least_max, least_max * 1.2, std::numeric_limits<double>::infinity()})
      for (const bool sends_bounded : {false, true}) {
        // Σ (w + 2 · send) + sync_0 of a split within the bound, or infinity.
        const auto sum = [&](const std::vector<std::size_t>& b) {
          double total = sync(b[1]);
          for (std::size_t s = 0; s < S; ++s) {
            const double in = s > 0 ? send(s, b[s]) : 0.0;
            if (w(b, s) > bound || (sends_bounded && in > bound)) return std::numeric_limits<double>::infinity();
            total += w(b, s) + 2 * in;
          }
          return total;
        };
        double least = std::numeric_limits<double>::infinity();
        for (const auto& b : splits)
          least = std::min(least, sum(b));
        const std::vector<std::size_t> found = latency.solve(bound, sends_bounded);
        BOOST_TEST_CONTEXT("trial " << trial << ", " << N << " units, " << S << " stages, bound " << bound
                                    << (sends_bounded ? " on sends too" : "")) {
          BOOST_TEST(found.empty() == std::isinf(least));
          if (!found.empty()) {
            BOOST_TEST(listed(found));
            BOOST_TEST(sum(found) == least, boost::test_tools::tolerance(1e-9));
          }
        }
      }

    // The least sends any split has, wherever its cuts fall (memory aside).
    double least_sends = std::numeric_limits<double>::infinity();
    autopipe::for_each_split(
        N, S, [](std::size_t, std::size_t, std::size_t) { return true; },
        [&](const std::vector<std::size_t>& b) {
          double total = 0;
          for (std::size_t s = 1; s < S; ++s)
            total += send(s, b[s]);
          least_sends = std::min(least_sends, total);
        });
    BOOST_TEST(autopipe::least_sends(S, N, send) == least_sends, boost::test_tools::tolerance(1e-12));

    if (splits.empty()) continue;
    autopipe::SendAwareSplit min_max(costs, S, slow, fits, send);
    for (const double weight : {1.0, 0.5}) {
      double least = std::numeric_limits<double>::infinity();
      for (const auto& b : splits)
        least = std::min(least, min_max.largest(b, weight));
      const std::vector<std::size_t> found = min_max.solve(splits.back(), 0.0, weight);
      BOOST_TEST_CONTEXT("trial " << trial << ", weight " << weight) {
        BOOST_TEST(listed(found));
        BOOST_TEST(min_max.largest(found, weight) <= least * (1 + 1e-4));
        const std::vector<std::size_t> spread = min_max.spread(least, weight);
        BOOST_TEST(listed(spread));
        if (!spread.empty()) BOOST_TEST(min_max.largest(spread, weight) <= least * (1 + 1e-12));
      }
    }
  }
}

/// Per stage of a random split problem over N units: its slowness (0.5 to 2), the most
/// units it holds (N / 2 to 3 N / 2) and the ms of its send at each unit boundary (up to
/// `most_send`, mostly little: a draw cubed).
struct RandomStages {
  std::vector<double> slowness;
  std::vector<std::size_t> most_units;
  std::vector<std::vector<double>> sends;
};

RandomStages random_stages(std::mt19937& random, std::size_t S, std::size_t N, double most_send) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  RandomStages r{std::vector<double>(S), std::vector<std::size_t>(S),
                 std::vector<std::vector<double>>(S, std::vector<double>(N + 1))};
  for (std::size_t s = 0; s < S; ++s) {
    r.slowness[s] = 0.5 + 1.5 * uniform(random);
    r.most_units[s] = N / 2 + static_cast<std::size_t>(uniform(random) * static_cast<double>(N));
    for (double& send : r.sends[s])
      send = most_send * std::pow(uniform(random), 3.0);
  }
  return r;
}

/// The least slowest stage (compute over speed) of any split that fits: T0.
template <class Fits>
double least_slowest_stage(const partitioning::UnitCosts& costs, std::size_t S, const Fits& fits,
                           const std::vector<double>& slowness) {
  double t0 = std::numeric_limits<double>::infinity();
  autopipe::for_each_split(costs.size(), S, fits, [&](const std::vector<std::size_t>& b) {
    double most = 0;
    for (std::size_t s = 0; s < S; ++s)
      most = std::max(most, costs.compute_ms(b[s], b[s + 1]) * slowness[s]);
    t0 = std::min(t0, most);
  });
  return t0;
}

BOOST_AUTO_TEST_CASE(the_latency_splits_keep_what_every_bound_would_give) {
  // At one micro-batch LatencySplit::candidates goes from the loosest bound down and
  // stops once no tighter bound can find a lesser latency: its splits are still the
  // least of those that solving under every bound (both families) gives. At several,
  // it goes up from the least bound and stops once the steady state at the bound
  // before, with all the compute and the least sends any split has, passes the least
  // latency found: the least is still the least of them all.
  std::mt19937 random(1);
  constexpr double infinite = std::numeric_limits<double>::infinity();
  std::size_t stopped_early = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const ModelProfile profile = random_profile(random, 6 + trial % 7);
    const partitioning::UnitCosts costs(profile, true, profile.batch_size);
    const std::size_t N = costs.size(), S = 2 + static_cast<std::size_t>(trial) % 4;
    // Sends of up to 60 ms: some pass the bounds, so bounding the sends matters.
    const auto [slowness, most_units, sends] = random_stages(random, S, N, 60);
    auto slow = [&](std::size_t s) { return slowness[s]; };
    auto fits = [&](std::size_t s, std::size_t i, std::size_t j) { return j - i <= most_units[s]; };
    auto send = [&](std::size_t s, std::size_t i) { return sends[s][i]; };
    auto sync = [&](std::size_t j) { return 0.1 * static_cast<double>(j); };
    const double t0 = least_slowest_stage(costs, S, fits, slowness);
    if (std::isinf(t0)) continue;

    // The bounds candidates() documents: T0 · (1 + δ), then half again up to the whole
    // model on the slowest stage, then none. The splits under them are the same at any
    // micro-batch count; their L is not.
    std::vector<double> bounds;
    for (const double delta : autopipe::wide_bounds)
      bounds.push_back(t0 * (1 + delta));
    const double whole = costs.compute_ms(0, N) * *std::max_element(slowness.begin(), slowness.end());
    for (double b = bounds.back() * 1.5; b < whole; b *= 1.5)
      bounds.push_back(b);
    bounds.push_back(infinite);
    std::vector<std::vector<std::size_t>> seen; // each distinct split under some bound
    autopipe::LatencySplit solver(costs, S, 1, slow, fits, send, sync);
    for (const double bound : bounds)
      for (const bool sends_bounded : {false, true})
        if (std::vector<std::size_t> b = solver.solve(bound, sends_bounded);
            !b.empty() && std::find(seen.begin(), seen.end(), b) == seen.end())
          seen.push_back(std::move(b));

    for (const std::size_t micro_batches : {1, 8}) {
      autopipe::LatencySplit latency(costs, S, micro_batches, slow, fits, send, sync);
      std::vector<double> every; // L of each
      for (const auto& b : seen)
        every.push_back(latency.latency(b));
      std::sort(every.begin(), every.end());

      constexpr std::size_t keep = 4;
      const std::vector<std::vector<std::size_t>> kept = latency.candidates(t0, keep, autopipe::wide_bounds);
      BOOST_TEST_CONTEXT("trial " << trial << ", " << N << " units, " << S << " stages, " << micro_batches
                                  << " micro-batches") {
        BOOST_TEST_REQUIRE(!kept.empty());
        // At one micro-batch every kept split; at several, the least.
        for (std::size_t k = 0; k < (micro_batches == 1 ? std::min(keep, every.size()) : 1); ++k)
          BOOST_TEST(latency.latency(kept[k]) == every[k], boost::test_tools::tolerance(1e-9));
        if (micro_batches == 1) BOOST_TEST(kept.size() == std::min(keep, every.size()));
      }
      if (micro_batches == 1) stopped_early += every.size() > keep;
    }
  }
  // The stop was put to the test: many trials had more splits to choose from than kept.
  BOOST_TEST(stopped_early > 50u);
}

BOOST_AUTO_TEST_CASE(the_latency_splits_are_sought_between_the_bounds_beside_their_best) {
  // At several micro-batches, LatencySplit::between_bounds tries bounds between those
  // either side of the best candidates() found: what it returns has a lesser latency
  // than every candidate, and on random chains, where the least can lie between two of
  // the coarse bounds, it finds one now and then (8 of these 400 trials).
  std::mt19937 random(2);
  std::size_t lessened = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const ModelProfile profile = random_profile(random, 6 + trial % 7);
    const partitioning::UnitCosts costs(profile, true, profile.batch_size);
    const std::size_t N = costs.size(), S = 2 + static_cast<std::size_t>(trial) % 5;
    const RandomStages stages = random_stages(random, S, N, 20);
    const std::vector<double>& slowness = stages.slowness;
    const std::vector<std::vector<double>>& sends = stages.sends;
    auto slow = [&](std::size_t s) { return slowness[s]; };
    auto fits = [](std::size_t, std::size_t, std::size_t) { return true; };
    auto send = [&](std::size_t s, std::size_t i) { return sends[s][i]; };
    auto sync = [&](std::size_t j) { return 0.1 * static_cast<double>(j); };
    const double t0 = least_slowest_stage(costs, S, fits, slowness);
    if (std::isinf(t0)) continue;
    autopipe::LatencySplit latency(costs, S, 8, slow, fits, send, sync);
    BOOST_TEST_CONTEXT("trial " << trial << ", " << N << " units, " << S << " stages") {
      const std::vector<std::vector<std::size_t>> kept = latency.candidates(t0, 4, autopipe::wide_bounds);
      BOOST_TEST_REQUIRE(!kept.empty());
      const std::vector<std::size_t> between = latency.between_bounds(2);
      if (between.empty()) continue;
      BOOST_TEST(between.size() == S + 1);
      for (const auto& b : kept)
        BOOST_TEST(latency.latency(between) < latency.latency(b));
      ++lessened;
    }
  }
  BOOST_TEST(lessened >= 5u);
}

BOOST_AUTO_TEST_CASE(every_split_that_fits_is_visited_once) {
  // 6 units in 3 non-empty stages: C(5, 2) = 10 splits; with at most 2 units on stage
  // 0, the 4 + 3 that begin with 1 or 2.
  std::set<std::vector<std::size_t>> all, small_first;
  autopipe::for_each_split(
      6, 3, [](std::size_t, std::size_t, std::size_t) { return true; },
      [&](const std::vector<std::size_t>& b) { BOOST_TEST(all.insert(b).second); });
  BOOST_TEST(all.size() == 10u);
  for (const auto& b : all) {
    BOOST_TEST(b.front() == 0u);
    BOOST_TEST(b.back() == 6u);
    BOOST_TEST((b[0] < b[1] && b[1] < b[2] && b[2] < b[3]));
  }
  autopipe::for_each_split(
      6, 3, [](std::size_t s, std::size_t i, std::size_t j) { return s != 0 || j - i <= 2; },
      [&](const std::vector<std::size_t>& b) { small_first.insert(b); });
  BOOST_TEST(small_first.size() == 4u + 3u);
  BOOST_TEST(autopipe::choose_up_to(5, 2, 100) == 10u);
  BOOST_TEST(autopipe::choose_up_to(1000, 10, 100) == 101u); // more than the cap
  BOOST_TEST(autopipe::choose_up_to(3, 5, 100) == 0u);
}

BOOST_AUTO_TEST_CASE(where_a_partial_pod_races_rings_for_a_nic_the_search_judges_every_pipeline) {
  // Thousands of pipelines on datacenter-10k, the last server filled by part of a pod:
  // its sends and the rings over its NIC start fractions of a millisecond apart, and
  // which goes first moves the iteration. The estimate's representatives cannot see
  // it (GNMT's cuts estimated at 97.7 ms simulated to 116.6 ms, 5% behind PipeDream's);
  // the best few candidates, and on AlexNet's 22 blocks every split, are judged with
  // every pipeline simulated. Both cells were lost in the grid benchmark.
  const std::string cluster = (test::source_root() / "configs/clusters/datacenter-10k.toml").string();
  for (const auto& [model, stages, pipelines, baseline] :
       {std::tuple{"alexnet", 4, 2500, "piper"}, std::tuple{"gnmt", 16, 625, "pipedream"}}) {
    auto with = [&](const std::string& partitioner) {
      const std::string profile = (test::source_root() / "configs/profiles/pipedream" / model).string() + ".txt";
      return plan(job("vgg16-4dev.toml", {"cluster=\"" + cluster + "\"", "model.profile=\"" + profile + "\"",
                                          "model.profile_batch_size=128", "plan.stages=" + std::to_string(stages),
                                          "plan.pipelines=" + std::to_string(pipelines), "plan.micro_batches=8",
                                          "train.batch_size=" + std::to_string(pipelines * 128), "train.momentum=0",
                                          "plan.partitioner=" + partitioner, "plan.mapper=hetero"}))
          .iteration_time_ms;
    };
    const double ours = with("autopipe"), theirs = with(baseline);
    BOOST_TEST_CONTEXT(model << " × " << stages << " stages, against " << baseline) {
      BOOST_TEST(ours <= theirs * 1.005, ours << " vs " << theirs);
    }
  }
}

BOOST_AUTO_TEST_CASE(hetero_keeps_pipeline_neighbours_on_one_server) {
  for (const auto& [stages, pipelines] : {std::pair{4, 2}, std::pair{8, 1}, std::pair{2, 4}}) {
    const JobSpec spec = job("resnet50-hetero-2x8.toml", {"plan.mapper=hetero", "plan.stages=" + std::to_string(stages),
                                                          "plan.pipelines=" + std::to_string(pipelines)});
    const Plan p = plan(spec);
    BOOST_TEST_CONTEXT(pipelines << " × " << stages) {
      for (const auto& pipeline : p.devices)
        for (std::size_t s = 1; s < pipeline.size(); ++s)
          BOOST_TEST(spec.cluster.devices[pipeline[s]].server == spec.cluster.devices[pipeline[0]].server);
      // Small jobs land on the fast server.
      BOOST_TEST(spec.cluster.servers[spec.cluster.devices[p.devices[0][0]].server].name == "fast");
    }
  }
}

BOOST_AUTO_TEST_CASE(autopipe_and_hetero_beat_dapple_and_sequential_on_mixed_clusters) {
  for (const char* config : {"gpt2-xl-hetero-2x8.toml", "resnet50-hetero-2x8.toml", "bert-large-mix-3gen.toml"}) {
    const Plan ours = plan(job(config));
    const Plan theirs = plan(job(config, {"plan.partitioner=dapple", "plan.mapper=sequential"}));
    BOOST_TEST(ours.samples_per_s > 1.2 * theirs.samples_per_s,
               config << ": " << ours.samples_per_s << " vs " << theirs.samples_per_s);
  }
}

BOOST_AUTO_TEST_CASE(a_plan_that_cannot_fit_names_the_stage_and_device) {
  auto result =
      make_plan(job("gpt2-xl-hetero-2x8.toml",
                    {"cluster=\"" + (test::source_root() / "configs/clusters/4dev-one-server.toml").string() + "\"",
                     "plan.stages=1", "plan.pipelines=1", "plan.micro_batches=1"}),
                test::plugins());
  BOOST_REQUIRE(!result.ok());
  BOOST_TEST(exit_status(result.error().code) == 2);
  BOOST_TEST(
      contains(result.error().message, "no plan fits in memory: stage 0 (blocks 0-49) on device node/gpu0 needs"),
      result.error().message);
  BOOST_TEST(contains(result.error().message, "but has 16.0 GiB"), result.error().message);
}

BOOST_AUTO_TEST_CASE(auto_searches_shapes_and_sliced_1f1b_fills_sooner) {
  const Plan searched = plan(job("vgg16-4dev.toml", {"plan.stages=\"auto\"", "plan.micro_batches=\"auto\""}));
  BOOST_TEST(searched.candidates > 1u);
  const Plan fixed = plan(job("vgg16-4dev.toml"));
  BOOST_TEST(searched.samples_per_s >= fixed.samples_per_s);

  const Plan plain = plan(job("bert-large-mix-3gen.toml", {"plan.scheduler=1f1b", "plan.stages=4", "plan.pipelines=1",
                                                           "plan.micro_batches=4", "train.batch_size=32"}));
  const Plan sliced =
      plan(job("bert-large-mix-3gen.toml", {"plan.scheduler=sliced-1f1b", "plan.stages=4", "plan.pipelines=1",
                                            "plan.micro_batches=4", "train.batch_size=32"}));
  BOOST_TEST(sliced.schedule.micro_batch_sizes.size() > plain.schedule.micro_batch_sizes.size());
  BOOST_TEST(sliced.iteration_time_ms < plain.iteration_time_ms);
  // Where most of each time is fixed, a slice costs nearly a whole micro-batch and fills
  // the pipeline little sooner: sliced-1f1b does not slice (priced per sample alone, it
  // still cut the first micro-batch into 5 slices).
  JobSpec mostly_fixed =
      job("bert-large-mix-3gen.toml", {"plan.scheduler=sliced-1f1b", "plan.stages=4", "plan.pipelines=1",
                                       "plan.micro_batches=4", "train.batch_size=32"});
  for (Block& b : mostly_fixed.profile.blocks) {
    b.forward_fixed_ms = 0.9 * b.forward_ms;
    b.backward_fixed_ms = 0.9 * b.backward_ms;
    for (SubBlock& sub : b.sub_blocks) {
      sub.forward_fixed_ms = 0.9 * sub.forward_ms;
      sub.backward_fixed_ms = 0.9 * sub.backward_ms;
    }
  }
  BOOST_REQUIRE(mostly_fixed.profile.validate().ok());
  BOOST_TEST(plan(mostly_fixed).schedule.micro_batch_sizes == plain.schedule.micro_batch_sizes);
}

BOOST_AUTO_TEST_CASE(a_search_reports_its_progress_from_inside_the_plugins) {
  for (const char* partitioner : {"dapple", "piper", "pipedream"}) {
    BOOST_TEST_CONTEXT(partitioner) {
      // One shape: whatever lies strictly between 0 and 1 comes from the plugin's search.
      const JobSpec spec = job("vgg16-4dev.toml", {std::string("plan.partitioner=") + partitioner, "plan.stages=4",
                                                   "plan.pipelines=1", "plan.micro_batches=8"});
      std::vector<double> fractions;
      std::string last;
      auto result = make_plan(spec, test::plugins(), [&](double fraction, const std::string& doing) {
        fractions.push_back(fraction);
        last = doing;
      });
      REQUIRE_OK(result);
      BOOST_REQUIRE(!fractions.empty());
      BOOST_TEST(std::is_sorted(fractions.begin(), fractions.end()));
      BOOST_TEST(fractions.front() == 0.0);
      BOOST_TEST(fractions.back() == 1.0);
      const auto inside = std::count_if(fractions.begin(), fractions.end(), [](double f) { return f > 0 && f < 1; });
      BOOST_TEST(inside >= 10, inside);
      BOOST_TEST(last == "done");
    }
  }
}

BOOST_AUTO_TEST_CASE(the_bisection_finds_the_programmes_answer_exactly) {
  // Random chains: stage costs are sums of unit times (monotone), cut costs anything.
  std::mt19937 random(11);
  std::uniform_real_distribution<double> unit(0.0, 10.0), cut(0.0, 25.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t N = 1 + random() % 40, S = 1 + random() % N;
    std::vector<double> prefix{0}, cuts(N + 1);
    for (std::size_t u = 0; u < N; ++u)
      prefix.push_back(prefix.back() + (trial % 7 == 0 ? 1.0 : unit(random)));
    for (auto& c : cuts)
      c = trial % 5 == 0 ? 0.0 : cut(random);
    auto stage = [&](std::size_t i, std::size_t j) { return prefix[j] - prefix[i]; };
    auto cut_at = [&](std::size_t i) { return cuts[i]; };
    auto worst = [&](const std::vector<std::size_t>& b) {
      double most = 0;
      for (std::size_t s = 0; s < S; ++s)
        most = std::max({most, stage(b[s], b[s + 1]), s > 0 ? cut_at(b[s]) : 0.0});
      return most;
    };
    const auto programme = partitioning::min_max_split(S, N, [&](std::size_t, std::size_t i, std::size_t j) {
      return std::max(i > 0 ? cut_at(i) : 0.0, stage(i, j));
    });
    const auto bisected = partitioning::min_max_split_monotone(S, N, stage, cut_at);
    BOOST_TEST_CONTEXT("trial " << trial << ": " << S << " stages of " << N << " units") {
      BOOST_REQUIRE_EQUAL(bisected.size(), S + 1);
      BOOST_TEST(bisected.front() == 0u);
      BOOST_TEST(bisected.back() == N);
      for (std::size_t s = 0; s < S; ++s)
        BOOST_TEST(bisected[s] < bisected[s + 1]);
      BOOST_TEST(worst(bisected) == worst(programme)); // exactly, not within a tolerance
    }
  }
}

BOOST_AUTO_TEST_CASE(a_programme_whose_cost_falls_as_a_stage_starts_later_finds_the_same_split_weighing_fewer_starts) {
  // Random chains with per-stage speeds, rings and memory limits (costs that fall as a
  // stage starts later, many of them tied: units of no time, integer times), solved by
  // the whole programme and by the one that weighs each end's latest starts only.
  std::mt19937 random(13);
  std::size_t weighed_all = 0, weighed_latest = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t N = 1 + random() % 60, S = 1 + random() % N;
    std::vector<double> prefix{0}, speed(S), ring(S);
    for (std::size_t u = 0; u < N; ++u)
      prefix.push_back(prefix.back() + static_cast<double>(random() % (trial % 3 == 0 ? 2 : 9)));
    for (std::size_t s = 0; s < S; ++s)
      speed[s] = 1.0 + static_cast<double>(random() % 3), ring[s] = static_cast<double>(random() % 4);
    const double memory = trial % 4 == 0 ? prefix.back() / 2 : std::numeric_limits<double>::infinity();
    auto cost_counting = [&](std::size_t& weighed) {
      return [&, memory](std::size_t s, std::size_t i, std::size_t j) {
        ++weighed;
        const double work = prefix[j] - prefix[i];
        return work > memory ? std::numeric_limits<double>::infinity() : work / speed[s] + ring[s] * work / 10;
      };
    };
    const auto all = partitioning::min_max_split(S, N, cost_counting(weighed_all));
    const auto latest = partitioning::min_max_split(S, N, cost_counting(weighed_latest), {},
                                                    partitioning::StartCost::falls_as_start_rises);
    BOOST_TEST_CONTEXT("trial " << trial << ": " << S << " stages of " << N << " units") {
      BOOST_TEST(latest == all, boost::test_tools::per_element());
    }
  }
  BOOST_TEST_MESSAGE("starts weighed: " << weighed_latest << " of " << weighed_all);
  BOOST_TEST(weighed_latest * 2 < weighed_all);
}

BOOST_AUTO_TEST_CASE(a_chain_too_long_for_the_whole_programme_is_split_coarse_then_fine_within_its_budget) {
  // A 3,000-block chain at 12 stages weighs 5.4·10^7 pairs whole; a budget of 10^6
  // groups it. The coarse pass weighs at most the budget, the fine pass a few pairs
  // per cut, and the split stays within 1% of the whole programme's.
  std::mt19937 random(5);
  const ModelProfile profile = random_profile(random, 3000);
  const partitioning::UnitCosts costs(profile, false, profile.batch_size);
  const std::size_t S = 12, N = costs.size();
  const double budget = 1e6;
  const auto groups = partitioning::coarse_groups(costs, S, budget);
  BOOST_TEST_REQUIRE(groups.size() > 2 * S);
  BOOST_TEST(groups.size() < N / 5);
  BOOST_TEST(partitioning::coarse_groups(costs, S, 1e9).empty()); // whole where the budget allows
  auto compute = [&](std::size_t, std::size_t i, std::size_t j) { return costs.compute_ms(i, j); };
  auto largest = [&](const std::vector<std::size_t>& b) {
    double most = 0;
    for (std::size_t s = 0; s < S; ++s)
      most = std::max(most, costs.compute_ms(b[s], b[s + 1]));
    return most;
  };
  std::vector<double> weighed, reported;
  const auto split = partitioning::coarse_to_fine(
      costs, S,
      [&](const partitioning::CutCandidates& candidates, const std::function<void(double)>& report) {
        weighed.push_back(candidates.pairs());
        return partitioning::min_max_split(candidates, compute, report);
      },
      [&](double f) { reported.push_back(f); }, budget);
  const auto whole = partitioning::min_max_split(S, N, compute);
  BOOST_TEST_REQUIRE(weighed.size() == 2u);
  BOOST_TEST(weighed[0] <= budget);
  BOOST_TEST(weighed[1] <= budget / 10);
  BOOST_TEST_REQUIRE(split.size() == S + 1);
  BOOST_TEST(split.front() == 0u);
  BOOST_TEST(split.back() == N);
  for (std::size_t s = 0; s < S; ++s)
    BOOST_TEST(split[s] < split[s + 1]);
  BOOST_TEST(largest(split) <= 1.01 * largest(whole), largest(split) << " against " << largest(whole));
  BOOST_TEST(largest(split) >= largest(whole));
  BOOST_TEST_MESSAGE("coarse to fine " << largest(split) << " ms, whole " << largest(whole) << " ms");
  BOOST_TEST_REQUIRE(!reported.empty());
  BOOST_TEST(std::is_sorted(reported.begin(), reported.end()));
  BOOST_TEST(reported.back() <= 1.0);
}

BOOST_AUTO_TEST_CASE(a_tuning_run_is_measured_by_its_samples_over_its_time) {
  // Steps of pipelines stepping alone end in bursts: two at once, then a pause. 128
  // samples a step, four steps in 20 ms: 25600 samples/s, where the median step
  // (9.5 ms) would say 13474.
  TunedSetting setting;
  record_measurement(setting, 128, {9.5, 0.5, 9.5, 0.5});
  BOOST_TEST(setting.measured_samples_per_s == 25600.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(setting.median_step_ms == 9.5);
  TunedSetting unmeasured;
  record_measurement(unmeasured, 128, {});
  BOOST_TEST(unmeasured.measured_samples_per_s == 0.0);
}

BOOST_AUTO_TEST_CASE(a_tuning_report_read_back_names_what_is_wrong_in_its_own_words) {
  // A damaged tune.json printed the JSON library's "[json.exception.type_error.304]".
  TuneReport report;
  report.tried.push_back({2, 2, 4, 900.0, 850.0, 4.5, ""});
  report.tried.push_back({4, 1, 8, 800.0, 0.0, 0.0, "out of memory"});
  report.chosen = 0;
  report.why = "fastest measured";
  auto back = tune_report_from_json(tune_report_to_json(report));
  REQUIRE_OK(back);
  BOOST_TEST(back->tried.size() == 2u);
  BOOST_TEST(back->tried[1].error == "out of memory");
  BOOST_TEST(back->why == "fastest measured");
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"{", "not a tuning report: not JSON"},
           {"{\"tried\": \"all\"}", "not a tuning report: no list of shapes tried (tried)"},
           {"{\"tried\": [{\"stages\": \"two\"}], \"chosen\": 0, \"why\": \"\"}",
            "tried[0].stages: expected a whole number ≥ 0, found \"two\""},
           {"{\"tried\": [], \"why\": \"\"}", "chosen: missing"},
           {"{\"tried\": [], \"chosen\": -1, \"why\": \"\"}", "chosen: expected a whole number ≥ 0, found -1"}})
    BOOST_TEST_CONTEXT(text) {
      auto read = tune_report_from_json(text);
      BOOST_REQUIRE(!read.ok());
      BOOST_TEST(exit_status(read.error().code) == 2);
      BOOST_TEST(read.error().message == message, read.error().message);
    }
}

BOOST_AUTO_TEST_CASE(scheduler_auto_takes_the_fastest_schedule_that_fits_never_slower_than_1f1b) {
  // Each shipped job with a profile: plan.scheduler = "auto" simulates every scheduler
  // found, lists them among the shapes tried, and keeps the fastest plan that fits.
  for (const char* file : {"vgg16-4dev.toml", "resnet50-hetero-2x8.toml", "bert-large-10k.toml"})
    BOOST_TEST_CONTEXT(file) {
      const Plan ofob = plan(job(file, {"plan.scheduler=\"1f1b\""}));
      const Plan chosen = plan(job(file, {"plan.scheduler=\"auto\""}));
      BOOST_TEST(chosen.iteration_time_ms <= ofob.iteration_time_ms * (1 + 1e-9),
                 chosen.scheduler << " " << chosen.iteration_time_ms << " ms against 1f1b's "
                                  << ofob.iteration_time_ms);
      BOOST_TEST(chosen.scheduler != "auto");
      std::set<std::string> tried;
      for (const TriedShape& t : chosen.tried)
        tried.insert(t.scheduler);
      BOOST_TEST(tried.count(chosen.scheduler) == 1u);
      BOOST_TEST(chosen.tried.front().scheduler == chosen.scheduler);
      BOOST_TEST(tried.size() >= 2u);
    }
}

BOOST_AUTO_TEST_CASE(at_one_micro_batch_autopipe_cuts_where_the_fewest_bytes_cross) {
  // DenseNet-121 (PipeDream's profile) on homo-64, one micro-batch a pipeline: no
  // steady state, so the iteration is every stage's compute, every send both ways and
  // the last all-reduce, and the cuts belong where the activations are small, however
  // uneven the stages. No other partitioner with any mapper plans faster.
  const ModelProfile profile = pipedream_profile("densenet121");
  const ClusterSpec cluster = shipped_cluster("homo-64");
  std::vector<std::string> partitioners, mappers;
  for (const PluginRecord& record : test::plugins().plugins()) {
    if (record.kind == PluginKind::partitioner) partitioners.push_back(record.name);
    if (record.kind == PluginKind::mapper) mappers.push_back(record.name);
  }
  for (const std::uint32_t stages : {16u, 32u, 64u})
    BOOST_TEST_CONTEXT(stages << " stages") {
      JobSpec spec;
      spec.file = "densenet.toml";
      spec.profile = profile;
      spec.cluster = cluster;
      spec.plan.stages = stages;
      spec.plan.pipelines = 64 / stages;
      spec.plan.micro_batches = 1;
      spec.train.batch_size = spec.plan.pipelines * 128;
      spec.plan.partitioner = "autopipe";
      spec.plan.mapper = "hetero";
      const double ours = plan(spec).iteration_time_ms;
      for (const std::string& partitioner : partitioners)
        for (const std::string& mapper : mappers) {
          spec.plan.partitioner = partitioner;
          spec.plan.mapper = mapper;
          auto other = make_plan(spec, test::plugins());
          if (!other) continue; // a baseline that cannot cut so many stages
          BOOST_TEST(ours <= other->iteration_time_ms * (1 + 1e-9),
                     partitioner << "+" << mapper << ": " << other->iteration_time_ms << " ms, autopipe+hetero " << ours
                                 << " ms");
        }
    }
}

BOOST_AUTO_TEST_CASE(at_one_micro_batch_over_many_replicas_the_last_ring_ends_the_iteration) {
  // GPT-2 XL in 1,250 pipelines of 8 stages on datacenter-10k, one micro-batch each:
  // the stages' all-reduces over 1,250 replicas outlast the pipeline, and the stage
  // whose ring and step end last ends the iteration, whichever it is. Balancing the
  // parameters alone does well there; autopipe's cuts do at least as well.
  auto profile = load_profile((test::source_root() / "configs/profiles/gpt2-xl.toml").string());
  REQUIRE_OK(profile);
  auto cluster = load_cluster((test::source_root() / "configs/clusters/datacenter-10k.toml").string());
  REQUIRE_OK(cluster);
  JobSpec spec;
  spec.file = "gpt.toml";
  spec.profile = *profile;
  spec.cluster = *cluster;
  spec.plan.stages = 8;
  spec.plan.pipelines = static_cast<std::uint32_t>(cluster->devices.size() / 8);
  spec.plan.micro_batches = 1;
  spec.train.batch_size = spec.plan.pipelines * profile->batch_size;
  const double ours = plan(spec).iteration_time_ms;
  spec.plan.partitioner = "parameters";
  const double balanced = plan(spec).iteration_time_ms;
  BOOST_TEST(ours <= balanced * (1 + 1e-3),
             "autopipe+hetero " << ours << " ms, parameters+hetero " << balanced << " ms");
}

BOOST_AUTO_TEST_CASE(at_one_micro_batch_the_later_stages_rings_run_while_the_front_computes_backwards) {
  // BERT-Large in 4 pipelines of 8 stages on pairs-4x8, one micro-batch each: a
  // stage's ring starts once the backwards from its first unit to the model's end are
  // done, so a split that gives the front stages fewer parameters and the back ones
  // more ends its last ring first. No other partitioner with any mapper plans faster
  // (parameters+hetero did, by 0.8%, before the search started from that split).
  auto profile = load_profile((test::source_root() / "configs/profiles/bert-large.toml").string());
  REQUIRE_OK(profile);
  JobSpec spec;
  spec.file = "bert.toml";
  spec.profile = *profile;
  spec.cluster = shipped_cluster("pairs-4x8");
  spec.plan.stages = 8;
  spec.plan.pipelines = 4;
  spec.plan.micro_batches = 1;
  spec.train.batch_size = spec.plan.pipelines * profile->batch_size;
  const double ours = plan(spec).iteration_time_ms;
  for (const PluginRecord& partitioner : test::plugins().plugins())
    for (const PluginRecord& mapper : test::plugins().plugins()) {
      if (partitioner.kind != PluginKind::partitioner || mapper.kind != PluginKind::mapper) continue;
      spec.plan.partitioner = partitioner.name;
      spec.plan.mapper = mapper.name;
      auto other = make_plan(spec, test::plugins());
      if (!other) continue; // a baseline that cannot cut so many stages
      BOOST_TEST(ours <= other->iteration_time_ms * (1 + 1e-9),
                 partitioner.name << "+" << mapper.name << ": " << other->iteration_time_ms << " ms, autopipe+hetero "
                                  << ours << " ms");
    }
}

BOOST_AUTO_TEST_CASE(an_unset_recompute_is_chosen_where_memory_decides_the_cuts_and_it_is_faster) {
  // GPT-2 XL over two pipelines of four 8 GiB devices, the second server half as fast:
  // without recomputing, Adam's state and 1F1B's stash fill a device to 98%, and the
  // cuts that would balance the slow server do not fit. Recomputing frees the memory,
  // and autopipe cuts for it: a faster plan than keeping every activation.
  test::ScratchDir dir;
  const std::string configs = (test::source_root() / "configs").string();
  auto spec = load_job(dir.write("gpt.toml", "cluster = \"" + configs +
                                                 "/clusters/emulated-hetero-2x4.toml\"\n[job]\nname = \"gpt\"\n"
                                                 "[model]\nprofile = \"" +
                                                 configs +
                                                 "/profiles/gpt2-xl.toml\"\n[train]\nbatch_size = 16\n"
                                                 "[plan]\nstages = 4\npipelines = 2\nmicro_batches = 8\n"));
  REQUIRE_OK(spec);
  JobSpec keep = *spec;
  keep.plan.recompute = {Recompute::none};
  const Plan kept = plan(keep);
  const Plan chosen = plan(*spec);
  BOOST_TEST_MESSAGE("keeping every activation " << kept.iteration_time_ms << " ms, chosen "
                                                 << option_name(chosen.stages.front().recompute) << " "
                                                 << chosen.iteration_time_ms << " ms");
  for (const StagePlan& stage : chosen.stages)
    BOOST_TEST((stage.recompute != Recompute::none));
  BOOST_TEST(chosen.iteration_time_ms < kept.iteration_time_ms);
}

BOOST_AUTO_TEST_CASE(an_unset_recompute_is_chosen_only_where_nothing_fits_without_it) {
  // VGG16 on four 16 GiB devices: at 256 samples a batch a plan keeps every activation;
  // at 512 none fits so, and with plan.recompute unset the planner recomputes instead,
  // while a job that says "none" is told that nothing fits.
  const Plan roomy = plan(job("vgg16-4dev.toml", {"train.batch_size=256"}));
  for (const StagePlan& stage : roomy.stages)
    BOOST_TEST((stage.recompute == Recompute::none));
  const Plan tight = plan(job("vgg16-4dev.toml", {"train.batch_size=512"}));
  for (const StagePlan& stage : tight.stages)
    BOOST_TEST((stage.recompute != Recompute::none));
  BOOST_REQUIRE(!tight.tried.empty());
  BOOST_TEST(tight.tried.front().fits);
  auto refused =
      make_plan(job("vgg16-4dev.toml", {"train.batch_size=512", "plan.recompute=\"none\""}), test::plugins());
  BOOST_REQUIRE(!refused);
  BOOST_TEST(exit_status(refused.error().code) == 2);
  BOOST_TEST(test::contains(refused.error().message, "no plan fits in memory"), refused.error().message);
}

BOOST_AUTO_TEST_CASE(a_recomputing_plan_costs_its_forward_again_and_keeps_less) {
  // VGG16's convolutions keep far more than their input; its classifier keeps less than
  // its input (the last feature map), so recomputing it would keep more.
  const Plan keep = plan(job("vgg16-4dev.toml"));
  const Plan again = plan(job("vgg16-4dev.toml", {"plan.recompute=\"full\""}));
  BOOST_REQUIRE(again.stages.size() == keep.stages.size());
  for (std::size_t s = 0; s < keep.stages.size(); ++s)
    BOOST_TEST_CONTEXT("stage " << s) {
      BOOST_TEST((again.stages[s].recompute == Recompute::full));
      BOOST_TEST(again.stages[s].estimate.backward_ms > keep.stages[s].estimate.backward_ms);
    }
  BOOST_TEST(again.stages.front().estimate.activation_bytes * 4 < keep.stages.front().estimate.activation_bytes);
  BOOST_TEST(again.stages.back().estimate.activation_bytes > keep.stages.back().estimate.activation_bytes);
  BOOST_TEST(again.iteration_time_ms > keep.iteration_time_ms);
  // One value per stage needs the stage count fixed to its length; else the key is named.
  auto mismatched = make_plan(job("vgg16-4dev.toml", {"plan.recompute=[\"full\", \"none\"]"}), test::plugins());
  BOOST_REQUIRE(!mismatched);
  BOOST_TEST(exit_status(mismatched.error().code) == 2);
  BOOST_TEST(
      test::contains(mismatched.error().message, "plan.recompute: 2 values, one per stage, but plan.stages is 4"),
      mismatched.error().message);
  // What each stage recomputes crosses to a launch's workers with the plan.
  auto back = planner::plan_from_wire(planner::plan_to_wire(again));
  REQUIRE_OK(back);
  BOOST_TEST((back->stages.back().recompute == Recompute::full));
}

BOOST_AUTO_TEST_CASE(a_search_counts_selective_recomputation_as_the_plan_does) {
  // Consecutive recomputed units keep only their run's input, and the backward holds
  // one run's activations again at a time; a cut inside a run makes two. For every
  // range of units, what a search's UnitCosts counts is what the plan's stage figures
  // say (a search that counted each unit a run of its own thought balanced splits did
  // not fit, and cut a 906-block chain on 4 GiB devices 1.5× slower than DAPPLE).
  std::mt19937 random(7);
  ModelProfile profile;
  profile.name = "runs";
  profile.batch_size = 8;
  profile.input_bytes = 8000;
  for (std::size_t b = 0; b < 40; ++b) {
    const double forward = std::uniform_real_distribution<double>(0.5, 2.0)(random);
    const std::uint64_t stash = std::uniform_int_distribution<std::uint64_t>(0, 3)(random) * 1000 + 10;
    profile.blocks.push_back({"b" + std::to_string(b),
                              forward,
                              2 * forward,
                              std::uniform_int_distribution<std::uint64_t>(1, 9)(random) * 800,
                              0,
                              stash,
                              {}});
  }
  REQUIRE_OK(profile.validate());
  constexpr std::uint32_t micro_batch = 4;
  const partitioning::UnitCosts costs(profile, true, micro_batch, Recompute::selective);
  std::size_t runs_cut = 0;
  for (std::size_t i = 0; i < costs.size(); ++i)
    for (std::size_t j = i + 1; j <= costs.size(); ++j) {
      const std::vector<StageFigures> f =
          stage_figures(profile, {{0, 0}, {i, 0}, {j, 0}, {profile.blocks.size(), 0}},
                        {Recompute::selective, Recompute::selective, Recompute::selective});
      const StageFigures& stage = f[1]; // units [i, j); the others may be empty
      BOOST_TEST_CONTEXT("units [" << i << ", " << j << ")") {
        BOOST_TEST(costs.stash_bytes(i, j) == micro_batch * static_cast<double>(stage.stash_bytes_per_sample),
                   boost::test_tools::tolerance(1e-6));
        BOOST_TEST(costs.recomputed_bytes(i, j) == micro_batch * static_cast<double>(stage.workspace_bytes_per_sample),
                   boost::test_tools::tolerance(1e-6));
      }
      runs_cut += costs.stash_bytes(i, j) != costs.stash_bytes(i, j - 1) + costs.stash_bytes(j - 1, j);
    }
  BOOST_TEST(runs_cut > 0u); // some ranges end inside a run
}

BOOST_AUTO_TEST_CASE(hetero_keeps_a_pipeline_off_slow_nics_where_its_sends_outweigh_faster_devices) {
  // Four servers of two fast devices behind 10 Gb/s NICs, and one server of eight
  // devices half as fast. Eight stages of a model whose activations are large (160 ms
  // over a NIC each) run faster on the one server than over four, though its devices
  // are slower: a mapper that only ranked by speed would cross three NICs.
  ClusterSpec cluster;
  cluster.name = "fast-pairs-slow-eight";
  cluster.network = {1.25e9, 5e-6};
  auto add_server = [&](const std::string& name, std::size_t devices, double speed) {
    Server server;
    server.name = name;
    server.pcie_switches = {{16e9, 0}};
    server.host_bridges = {{32e9}};
    server.inter_bridge_bandwidth = 20e9;
    server.nic_bandwidth = 1.25e9;
    const std::size_t index = cluster.servers.size();
    cluster.servers.push_back(server);
    for (std::size_t d = 0; d < devices; ++d)
      cluster.devices.push_back({name + "/gpu" + std::to_string(d), "g", speed, 32ull << 30, 900e9, index, 0, -1});
  };
  for (int s = 0; s < 4; ++s)
    add_server("fast-" + std::to_string(s), 2, 2.0);
  add_server("eight", 8, 1.0);
  REQUIRE_OK(cluster.validate());
  ModelProfile profile;
  profile.name = "wide";
  profile.batch_size = 8;
  for (int b = 0; b < 16; ++b)
    profile.blocks.push_back({"b" + std::to_string(b), 2.0, 4.0, 200'000'000, 1'000'000, 1'000'000, {}});
  JobSpec spec = one_pipeline_job(profile, cluster, 8, 1);
  spec.plan.mapper = "hetero";
  const Plan ours = plan(spec);
  spec.plan.mapper = "sequential";
  const Plan fastest_first = plan(spec);
  for (const DeviceId d : ours.devices[0])
    BOOST_TEST(cluster.servers[cluster.devices[d].server].name == "eight");
  BOOST_TEST(ours.iteration_time_ms < 0.5 * fastest_first.iteration_time_ms,
             ours.iteration_time_ms << " ms against " << fastest_first.iteration_time_ms);
}

BOOST_AUTO_TEST_CASE(where_memory_places_the_cuts_of_a_plan_far_from_full_the_planner_tries_recomputing) {
  // Two equal devices of 20 units of memory and ten equal blocks, the fourth stashing
  // ten units per sample and the others one. Under 1F1B the first stage holds two
  // micro-batches, so it cannot take the fourth block: without recomputing, the cuts
  // fall after three blocks (30% and 80% full, far from the 90% that says memory
  // binds), and the second stage computes seven blocks. Recomputing the fourth block
  // (selective: it stashes the most per ms) lets the cuts fall at five, and the plan is
  // faster; autopipe says memory placed its cuts, and the planner tries it.
  constexpr std::uint64_t unit = 1'000'000;
  ClusterSpec cluster;
  cluster.name = "two";
  cluster.network = {1e9, 0};
  Server server;
  server.name = "s";
  server.pcie_switches = {{16e9, 0}};
  server.host_bridges = {{32e9}};
  server.nic_bandwidth = 1e9;
  cluster.servers.push_back(server);
  for (int d = 0; d < 2; ++d)
    cluster.devices.push_back({"s/gpu" + std::to_string(d), "g", 1.0, 20 * unit, 500e9, 0, 0, -1});
  ModelProfile profile;
  profile.name = "jump";
  profile.batch_size = 4;
  for (int b = 0; b < 10; ++b)
    profile.blocks.push_back({"b" + std::to_string(b), 1.0, 2.0, 1000, 0, (b == 3 ? 10 : 1) * unit, {}});
  JobSpec spec = one_pipeline_job(profile, cluster, 2, 4);
  const Plan chosen = plan(spec);
  spec.plan.recompute = {Recompute::none};
  const Plan kept = plan(spec);
  BOOST_TEST(kept.stages[0].end.block == 3u);
  BOOST_TEST(chosen.stages[0].end.block == 5u);
  BOOST_TEST((chosen.stages[0].recompute == Recompute::selective));
  BOOST_TEST(chosen.iteration_time_ms < kept.iteration_time_ms);
}

BOOST_AUTO_TEST_CASE(at_few_stages_autopipe_finds_cuts_more_moves_apart_than_descent_takes) {
  // GNMT in 6 stages × 10 pipelines on homo-64 at one micro-batch: stage-major, each
  // stage's ring of 10 replicas crosses a NIC, and the iteration ends with the rings.
  // DAPPLE's cuts (after blocks 1, 6, 11, 16 and 44) are four cuts away from any start
  // of the search and from where descent led (1, 16, 17, 18, 44: 146.5 ms against
  // 128.7); the splits at boundaries of groups of three units reach them.
  const ModelProfile profile = pipedream_profile("gnmt");
  JobSpec spec = one_pipeline_job(profile, shipped_cluster("homo-64"), 6, 1);
  spec.plan.pipelines = 10;
  spec.train.batch_size = 10 * profile.batch_size;
  spec.plan.mapper = "hetero";
  const Plan ours = plan(spec);
  spec.plan.partitioner = "dapple";
  const Plan theirs = plan(spec);
  BOOST_TEST(ours.iteration_time_ms <= theirs.iteration_time_ms * 1.001,
             ours.iteration_time_ms << " ms against DAPPLE's " << theirs.iteration_time_ms);
}

BOOST_AUTO_TEST_CASE(the_search_starts_from_equal_block_counts_too) {
  // 32 stages of the grid benchmark's 1,000-block chain (two sub-blocks a block) in one
  // pipeline of 32 micro-batches on pairs-4x8: equal block counts, the first stages a
  // block ahead, are faster than where descent leads from every other start (equal
  // sub-block counts included), more cuts away than it moves.
  JobSpec spec = one_pipeline_job(bench::synthetic_chain(1000), shipped_cluster("pairs-4x8"), 32, 32);
  spec.train.batch_size = 32;
  spec.plan.mapper = "hetero";
  const double ours = plan(spec).iteration_time_ms;
  spec.plan.partitioner = "uniform";
  const double uniform = plan(spec).iteration_time_ms;
  BOOST_TEST(ours <= uniform * (1 + 1e-9), ours << " " << uniform);
}

BOOST_AUTO_TEST_CASE(where_many_pipelines_run_the_judge_weighs_equal_block_counts_too) {
  // 64 stages of the same chain in 156 pipelines of 32 micro-batches on datacenter-10k:
  // the estimate ranks equal block counts, the first stages a block ahead, below the
  // starts the descents leave from, and every descent ends 0.5% slower than they
  // simulate. Judged beside where the descents end, they win and settle further.
  JobSpec spec = one_pipeline_job(bench::synthetic_chain(1000), shipped_cluster("datacenter-10k"), 64, 32);
  spec.plan.pipelines = 156;
  spec.train.batch_size = 156 * 32;
  spec.plan.mapper = "hetero";
  const double ours = plan(spec).iteration_time_ms;
  spec.plan.partitioner = "uniform";
  const double uniform = plan(spec).iteration_time_ms;
  BOOST_TEST(ours <= uniform * (1 + 1e-9), ours << " " << uniform);
}

BOOST_AUTO_TEST_CASE(a_slow_stage_hides_the_loops_of_the_light_stages_after_it) {
  // GNMT in 16 stages of one pipeline on hetero-2x8 at 8 micro-batches: its heaviest
  // block falls on a slow GPU. PipeDream's partitioner leaves four light stages after
  // it, whose loop (2.4 ms) the slow stage's warm-up forwards and cool-down backwards
  // hide; a closed form that counted every stage's fill and drain in full priced that
  // split 4.7% above the simulation, ranked it out, and lost to it by 0.2%.
  const ModelProfile profile = pipedream_profile("gnmt");
  JobSpec spec = one_pipeline_job(profile, shipped_cluster("hetero-2x8"), 16, 8);
  spec.plan.mapper = "hetero";
  const double ours = plan(spec).iteration_time_ms;
  for (const char* partitioner : {"pipedream", "dapple", "piper", "parameters", "uniform"})
    for (const char* mapper : {"sequential", "hetero"}) {
      spec.plan.partitioner = partitioner;
      spec.plan.mapper = mapper;
      const double theirs = plan(spec).iteration_time_ms;
      BOOST_TEST_CONTEXT(partitioner << " + " << mapper) { BOOST_TEST(ours <= theirs * (1 + 1e-9)); }
    }
}

/// Splits a search weighs against each other: the exact min-max compute split with
/// each cut moved by up to 8 units at random, 40 of them.
std::vector<std::vector<std::size_t>> splits_near_the_balanced_one(const PlanContext& context,
                                                                   const partitioning::UnitCosts& costs,
                                                                   const IterationModel& model, std::mt19937& random) {
  std::vector<double> speeds(context.stages);
  for (std::size_t s = 0; s < context.stages; ++s)
    speeds[s] = model.stage_speed(s);
  autopipe::BalancedSplit balanced(context, costs, speeds, {});
  const std::vector<std::size_t> start = balanced.spread(balanced.min_max_bound());
  std::vector<std::vector<std::size_t>> splits;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::size_t> b = start;
    for (std::size_t k = 1; k < context.stages; ++k) {
      const long shift = static_cast<long>(random() % 17) - 8;
      const long lo = static_cast<long>(b[k - 1]) + 1, hi = static_cast<long>(b[k + 1]) - 1;
      b[k] = static_cast<std::size_t>(std::clamp(static_cast<long>(b[k]) + shift, lo, hi));
    }
    splits.push_back(std::move(b));
  }
  return splits;
}

/// One pipeline of `stages` on the first devices of a shipped cluster, 16 samples a
/// micro-batch, as the formula tests plan it.
PlanContext one_pipeline_context(const ModelProfile& profile, const ClusterSpec& cluster, std::size_t stages,
                                 std::size_t micro_batches) {
  PlanContext context{.profile = profile, .cluster = cluster};
  context.stages = stages;
  context.micro_batch_sizes = std::vector<std::uint32_t>(micro_batches, 16);
  context.scheduler = "1f1b";
  context.action_overhead_ms = 0.1;
  context.optimizer_factor = 2;
  return context;
}

std::vector<DeviceId> first_devices(std::size_t stages) {
  std::vector<DeviceId> devices(stages);
  std::iota(devices.begin(), devices.end(), DeviceId{0});
  return devices;
}

/// One setting of the formula tests: one pipeline on the first devices of a shipped
/// cluster, what estimates it, and the simulation of every micro-batch.
struct FormulaCase {
  std::string name; ///< "homo-64 vgg16 S=4 m=8"
  std::size_t micro_batches;
  const PlanContext& context;
  const partitioning::UnitCosts& costs;
  IterationModel& model; ///< as the search estimates
  const partitioning::MemoryFit& fits;
  autopipe::IterationSearch& simulator; ///< every micro-batch simulated
};

/// Every setting: 4, 8 and 32 stages of four PipeDream profiles on homo-64 and
/// mix-4x8-3gen at 1, 8 and 32 micro-batches, where the profile has two units a stage.
template <class Visit> void for_each_formula_case(Visit visit) {
  for (const char* cluster_name : {"homo-64", "mix-4x8-3gen"}) {
    const ClusterSpec cluster = shipped_cluster(cluster_name);
    for (const char* name : {"vgg16", "resnet50", "densenet121", "gnmt"}) {
      const ModelProfile profile = pipedream_profile(name);
      for (std::size_t stages : {4, 8, 32})
        for (std::size_t micro_batches : {1, 8, 32}) {
          const PlanContext context = one_pipeline_context(profile, cluster, stages, micro_batches);
          const partitioning::UnitCosts costs(profile, true, 16);
          if (costs.size() < 2 * stages) continue;
          IterationModel model = autopipe::iteration_model(context, {first_devices(stages)});
          IterationModel full = model.in_full();
          full.set_bound_lanes(BoundLanes::simulated);
          const partitioning::MemoryFit fits(costs, context, {});
          autopipe::IterationSearch simulator(context, costs, full, fits, 1'000'000);
          visit(FormulaCase{std::string(cluster_name) + " " + name + " S=" + std::to_string(stages) +
                                " m=" + std::to_string(micro_batches),
                            micro_batches, context, costs, model, fits, simulator});
        }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_pipeline_formula_is_the_simulation_at_one_micro_batch_and_ranks_like_it_at_eight) {
  // At one micro-batch the formula is the simulator's iteration (every micro-batch
  // simulated). At eight it ranks splits near the balanced one as the simulator does,
  // Spearman 0.97 on average: counting every stage's fill and drain in full, as if no
  // stage hid the loops of the light ones after it, it ranked them at 0.88 (0.13 on 8
  // stages of DenseNet-121). Beyond, how well it ranks them is reported.
  std::mt19937 random(29);
  std::vector<double> at_eight; // Spearman's rho per model, cluster and stage count
  for_each_formula_case([&](const FormulaCase& c) {
    const autopipe::PipelineFormula formula(c.costs, c.model, c.context.stages, c.micro_batches, false, 0.1);
    std::vector<double> estimated, simulated;
    for (const std::vector<std::size_t>& b : splits_near_the_balanced_one(c.context, c.costs, c.model, random)) {
      estimated.push_back(formula.time(b));
      simulated.push_back(c.simulator.time(b));
    }
    const double rho = test::spearman(estimated, simulated);
    double worst = 0, low = 0;
    for (std::size_t i = 0; i < estimated.size(); ++i)
      worst = std::max(worst, std::abs(estimated[i] / simulated[i] - 1)),
      low = std::min(low, estimated[i] / simulated[i] - 1);
    BOOST_TEST_MESSAGE(c.name << ": Spearman " << rho << ", worst error " << worst << " lowest " << low);
    if (c.micro_batches == 1) BOOST_TEST_CONTEXT(c.name) {
        BOOST_TEST(worst <= 1e-9);
      }
    if (c.micro_batches == 8) at_eight.push_back(rho);
  });
  const double mean = std::accumulate(at_eight.begin(), at_eight.end(), 0.0) / static_cast<double>(at_eight.size());
  BOOST_TEST(at_eight.size() >= 10u);
  BOOST_TEST(mean >= 0.95, "mean Spearman at 8 micro-batches " << mean);
}

BOOST_AUTO_TEST_CASE(the_finalists_judge_ranks_like_every_micro_batch_simulated_where_the_period_does_not) {
  // At 32 micro-batches the estimate simulates 8 and prices the rest at its period,
  // which ranks splits near the balanced one at Spearman 0.86 on average against every
  // micro-batch simulated (0.49 on 8 stages of DenseNet-121): the judge of the search's
  // finalists adds the closed form's growth past the 8 (or the busiest lane's, where
  // more) to their simulation instead, 0.94. At 8 micro-batches it is the simulation
  // itself, and at one the closed form, which is the simulation there.
  std::mt19937 random(31);
  std::vector<double> judged_rho, period_rho;
  for_each_formula_case([&](const FormulaCase& c) {
    autopipe::IterationSearch period(c.context, c.costs, c.model, c.fits, 1'000'000);
    const autopipe::PipelineFormula formula(c.costs, c.model, c.context.stages, c.micro_batches, false, 0.1);
    autopipe::FinalistJudge judge(c.context, c.costs, c.model, formula, c.fits);
    std::vector<double> judged, priced, simulated;
    for (const std::vector<std::size_t>& b : splits_near_the_balanced_one(c.context, c.costs, c.model, random)) {
      judged.push_back(judge.time(b));
      priced.push_back(period.time(b));
      simulated.push_back(c.simulator.time(b));
    }
    BOOST_TEST_CONTEXT(c.name) {
      if (c.micro_batches <= 8)
        for (std::size_t i = 0; i < judged.size(); ++i)
          BOOST_TEST(judged[i] == simulated[i], boost::test_tools::tolerance(1e-9));
    }
    if (c.micro_batches == 32) {
      judged_rho.push_back(test::spearman(judged, simulated));
      period_rho.push_back(test::spearman(priced, simulated));
      BOOST_TEST_MESSAGE(c.name << ": Spearman, judge " << judged_rho.back() << ", period " << period_rho.back());
    }
  });
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  BOOST_TEST_MESSAGE("mean Spearman at 32 micro-batches: judge " << mean(judged_rho) << ", period "
                                                                 << mean(period_rho));
  BOOST_TEST(judged_rho.size() >= 10u);
  BOOST_TEST(mean(judged_rho) >= 0.93, "judge's mean Spearman at 32 micro-batches " << mean(judged_rho));
  BOOST_TEST(mean(judged_rho) >= mean(period_rho) + 0.03,
             "judge " << mean(judged_rho) << " against the period's " << mean(period_rho));
}

BOOST_AUTO_TEST_CASE(where_the_judge_is_the_simulation_and_overturns_the_formula_its_winner_settles) {
  // At 8 micro-batches the finalists' judge is the simulation itself. Handed two splits
  // near the balanced one, the slower first, where the closed form puts its best, it
  // chooses the second and settles it: a descent on the simulation, which here always
  // finds a faster split within its budget, and never ends slower than it set out.
  std::mt19937 random(37);
  std::size_t judged = 0, settled_faster = 0;
  for_each_formula_case([&](const FormulaCase& c) {
    if (c.micro_batches != 8) return;
    const std::vector<std::vector<std::size_t>> near =
        splits_near_the_balanced_one(c.context, c.costs, c.model, random);
    std::vector<std::vector<std::size_t>> finalists{near[0], near[1]};
    if (c.simulator.time(finalists[0]) < c.simulator.time(finalists[1])) std::swap(finalists[0], finalists[1]);
    const double second = c.simulator.time(finalists[1]);
    if (c.simulator.time(finalists[0]) <= second) return; // a tie: nothing overturned
    const autopipe::PipelineFormula formula(c.costs, c.model, c.context.stages, c.micro_batches, false, 0.1);
    autopipe::FinalistJudge judge(c.context, c.costs, c.model, formula, c.fits);
    const double t = c.simulator.time(judge.fastest(finalists));
    ++judged;
    settled_faster += t < second * (1 - 1e-9);
    BOOST_TEST_CONTEXT(c.name) { BOOST_TEST(t <= second * (1 + 1e-9)); }
  });
  BOOST_TEST(judged >= 20u);
  BOOST_TEST(settled_faster == judged);
}

BOOST_AUTO_TEST_CASE(the_finalists_judge_leaves_unsimulated_a_finalist_its_bound_rules_out) {
  // Where the judge is the simulation (8 micro-batches), a finalist whose bound from
  // below (IterationModel::least_ms) is no less than a finalist already judged cannot
  // win. Handed a split near the balanced one and then one whose first stage holds
  // half the compute, which that bound rules out (8 micro-batches of half the compute
  // on one device outlast the other's whole pipeline, where its sends do not), the
  // judge keeps the first and simulates it alone.
  std::mt19937 random(41);
  std::size_t judged = 0;
  for_each_formula_case([&](const FormulaCase& c) {
    if (c.micro_batches != 8) return;
    const std::size_t S = c.context.stages, N = c.costs.size();
    std::vector<std::size_t> heavy_first(S + 1, N);
    heavy_first[0] = 0;
    heavy_first[1] = 1;
    while (c.costs.compute_ms(0, heavy_first[1]) < c.costs.compute_ms(0, N) / 2)
      ++heavy_first[1];
    if (N - heavy_first[1] < S - 1) return;
    for (std::size_t s = 2; s < S; ++s)
      heavy_first[s] = heavy_first[1] + (s - 1) * (N - heavy_first[1]) / (S - 1);
    const std::vector<std::size_t> near = splits_near_the_balanced_one(c.context, c.costs, c.model, random).front();
    autopipe::IterationSearch bounds(c.context, c.costs, c.model, c.fits, 1);
    if (bounds.least_time(heavy_first) < c.simulator.time(near)) return;
    const autopipe::PipelineFormula formula(c.costs, c.model, S, c.micro_batches, false, 0.1);
    autopipe::FinalistJudge judge(c.context, c.costs, c.model, formula, c.fits);
    const std::size_t before = c.model.simulated_so_far();
    const std::vector<std::size_t> chosen = judge.fastest({near, heavy_first});
    const std::size_t simulated = c.model.simulated_so_far() - before;
    ++judged;
    BOOST_TEST_CONTEXT(c.name) {
      BOOST_TEST(chosen == near, boost::test_tools::per_element());
      BOOST_TEST(simulated == c.model.simulated_actions());
    }
  });
  BOOST_TEST(judged >= 10u);
}

BOOST_AUTO_TEST_CASE(hetero_asked_again_answers_as_a_fresh_mapper_does) {
  // One mapper keeps each layout's searched cuts across map() calls; asked in turn for
  // other micro-batch counts, models and partitions, it must answer each as a mapper
  // asked nothing before does.
  const ClusterSpec cluster = shipped_cluster("hetero-2x8");
  const ModelProfile resnet = pipedream_profile("resnet50"), vgg = pipedream_profile("vgg16");
  auto kept = test::plugins().mapper("hetero");
  REQUIRE_OK(kept);
  for (int pass = 0; pass < 2; ++pass)
    for (const ModelProfile* profile : {&resnet, &vgg})
      for (std::size_t micro_batches : {1, 8})
        for (bool even : {true, false}) {
          PlanContext context = one_pipeline_context(*profile, cluster, 4, micro_batches);
          context.pipelines = 2;
          const partitioning::UnitCosts costs(*profile, true, 16);
          std::vector<std::size_t> b(5);
          for (std::size_t s = 0; s <= 4; ++s)
            b[s] = even ? s * costs.size() / 4 : (s == 4 ? costs.size() : s * (costs.size() / 8));
          const Partition partition = costs.to_partition(b);
          auto fresh = test::plugins().mapper("hetero");
          REQUIRE_OK(fresh);
          auto asked_again = (*kept)->map(context, partition), asked_first = (*fresh)->map(context, partition);
          REQUIRE_OK(asked_again);
          REQUIRE_OK(asked_first);
          BOOST_TEST_CONTEXT(profile->name << ", " << micro_batches << " micro-batches, pass " << pass) {
            BOOST_TEST((asked_again->devices == asked_first->devices));
          }
        }
}

BOOST_AUTO_TEST_CASE(a_descent_on_the_simulator_leaves_unsimulated_the_moves_its_bound_rules_out) {
  // A move whose bound from below (IterationModel::least_ms) is no shorter than the
  // iteration to beat cannot win: the descent counts it but does not simulate it, and
  // still ends where no move of a cut by 1, 2, 4, 8 or 16 units shortens the
  // iteration, each simulated afresh.
  // VGG-16 in 4 stages of 4 pipelines on homo-64, from the even split: the moves of
  // the first blocks' costly cuts are most of what it rules out.
  const ClusterSpec cluster = shipped_cluster("homo-64");
  const ModelProfile profile = pipedream_profile("vgg16");
  const std::size_t S = 4, P = 4;
  PlanContext context = one_pipeline_context(profile, cluster, S, 8);
  context.pipelines = P;
  std::vector<std::vector<DeviceId>> placement(P);
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s)
      placement[p].push_back(static_cast<DeviceId>(p * S + s));
  const partitioning::UnitCosts costs(profile, true, 16);
  const partitioning::MemoryFit fits(costs, context, {});
  IterationModel model = autopipe::iteration_model(context, placement);
  autopipe::IterationSearch descent(context, costs, model, fits, 1'000'000);
  std::vector<std::size_t> b(S + 1);
  for (std::size_t s = 0; s <= S; ++s)
    b[s] = s * costs.size() / S;
  const std::size_t before = model.simulated_so_far();
  double t = descent.time(b);
  descent.refine(b, t, std::numeric_limits<double>::infinity());
  const std::size_t simulations = (model.simulated_so_far() - before) / model.simulated_actions();
  BOOST_TEST_MESSAGE("evaluations " << descent.evaluations() << ", simulations " << simulations);
  BOOST_TEST(simulations * 3 < descent.evaluations() * 2);
  IterationModel fresh = autopipe::iteration_model(context, placement);
  autopipe::IterationSearch again(context, costs, fresh, fits, 1'000'000);
  for (std::size_t k = 1; k < S; ++k)
    for (const std::ptrdiff_t step : {-16, -8, -4, -2, -1, 1, 2, 4, 8, 16}) {
      const std::ptrdiff_t value = static_cast<std::ptrdiff_t>(b[k]) + step;
      if (value <= static_cast<std::ptrdiff_t>(b[k - 1]) || value >= static_cast<std::ptrdiff_t>(b[k + 1])) continue;
      std::vector<std::size_t> moved = b;
      moved[k] = static_cast<std::size_t>(value);
      bool fit = true;
      for (std::size_t s = 0; s < S; ++s)
        fit = fit && fits(s, moved[s], moved[s + 1]);
      if (fit) BOOST_TEST(again.time(moved) >= t * (1 - 1e-9), "cut " << k << " at " << value);
    }
}

BOOST_AUTO_TEST_CASE(where_the_search_ranks_every_split_it_estimates_only_those_a_bound_cannot_rule_out) {
  // 4 stages of GNMT's units on four devices are few enough splits for the search to
  // rank every one by the estimate. It estimates only those IterationModel::least_ms
  // cannot rule out, and keeps the split that estimating every one ranks first.
  const ClusterSpec cluster = shipped_cluster("4dev-one-server");
  const ModelProfile profile = pipedream_profile("gnmt");
  const PlanContext context = one_pipeline_context(profile, cluster, 4, 8);
  const partitioning::UnitCosts costs(profile, true, 16);
  const partitioning::MemoryFit fits(costs, context, {});
  IterationModel model = autopipe::iteration_model(context, {first_devices(4)});
  autopipe::IterationSearch every(context, costs, model, fits, std::numeric_limits<std::size_t>::max());
  std::vector<std::size_t> fastest;
  double least = std::numeric_limits<double>::infinity();
  std::size_t splits = 0;
  autopipe::for_each_split(costs.size(), 4, fits, [&](const std::vector<std::size_t>& b) {
    ++splits;
    if (const double t = every.time(b); t < least) least = t, fastest = b;
  });
  IterationModel searched = autopipe::iteration_model(context, {first_devices(4)});
  const std::vector<std::size_t> kept = autopipe::search_cuts(context, costs, searched);
  const std::size_t estimates = searched.simulated_so_far() / searched.simulated_actions();
  BOOST_TEST_MESSAGE(estimates << " estimates of " << splits << " splits");
  BOOST_TEST(kept == fastest, boost::test_tools::per_element());
  BOOST_TEST(estimates * 20 < splits);
}

BOOST_AUTO_TEST_CASE(a_descent_on_the_simulator_simulates_each_split_once) {
  // A descent comes back to splits it has estimated (a cut moved there and back, the
  // second start's path joining the first's); a revisit counts against its budget but
  // is not simulated again, and gives the time the split was simulated at.
  const ClusterSpec cluster = shipped_cluster("homo-64");
  const ModelProfile profile = pipedream_profile("resnet50");
  const PlanContext context = one_pipeline_context(profile, cluster, 8, 8);
  const partitioning::UnitCosts costs(profile, true, 16);
  IterationModel model = autopipe::iteration_model(context, {first_devices(8)});
  const partitioning::MemoryFit fits(costs, context, {});
  autopipe::IterationSearch descent(context, costs, model, fits, 1'000'000);
  std::vector<std::vector<std::size_t>> starts(2, std::vector<std::size_t>(9));
  for (std::size_t s = 0; s <= 8; ++s)
    starts[0][s] = s * costs.size() / 8, starts[1][s] = s == 8 ? costs.size() : s * (costs.size() / 8);
  const std::size_t before = model.simulated_so_far();
  for (std::vector<std::size_t>& b : starts) {
    double t = descent.time(b);
    descent.refine(b, t, std::numeric_limits<double>::infinity());
    IterationModel fresh = autopipe::iteration_model(context, {first_devices(8)});
    autopipe::IterationSearch again(context, costs, fresh, fits, 1);
    BOOST_TEST(again.time(b) == t);
  }
  const std::size_t simulations = (model.simulated_so_far() - before) / model.simulated_actions();
  BOOST_TEST_MESSAGE("evaluations " << descent.evaluations() << ", simulations " << simulations);
  BOOST_TEST(simulations < descent.evaluations());
}
