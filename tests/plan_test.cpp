// Plans of the shipped configs: shape, estimates, JSON, and the planner's input checks.
#define BOOST_TEST_MODULE plan
#include <boost/test/unit_test.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/report.hpp>

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

using namespace actorpipe;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const PluginRegistry& registry() {
  static PluginRegistry instance = [] {
    auto r = PluginRegistry::discover(PluginRegistry::default_folders());
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
  }();
  return instance;
}

JobSpec job(const std::string& config, const std::vector<std::string>& overrides = {}) {
  auto spec = load_job((test::source_root() / "configs" / config).string(), overrides);
  BOOST_REQUIRE_MESSAGE(spec.ok(), (spec.ok() ? "" : spec.error().message));
  return *spec;
}

Plan plan(const JobSpec& spec) {
  auto result = make_plan(spec, registry());
  BOOST_REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().message));
  return *result;
}

double stage_parameters(const ModelProfile& p, std::size_t from, std::size_t to) {
  double sum = 0;
  for (std::size_t b = from; b < to; ++b) sum += static_cast<double>(p.blocks[b].parameter_bytes);
  return sum;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_shipped_config_plans) {
  for (const auto& entry : std::filesystem::directory_iterator(test::source_root() / "configs")) {
    if (entry.path().extension() != ".toml") continue;
    BOOST_TEST_CONTEXT(entry.path().filename()) {
      const JobSpec spec = job(entry.path().filename().string());
      const Plan p = plan(spec);
      BOOST_TEST(p.validate(spec.profile, spec.cluster).ok());
      BOOST_TEST(p.balance >= 1.0);
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
  for (std::size_t s = 0; s < 4; ++s) different = different || !(balanced.stages[s].end == uniform.stages[s].end);
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
  const JobSpec spec = job("resnet50-hetero-2x8.toml", {"plan.partitioner=uniform", "plan.mapper=sequential"});
  const Plan p = plan(spec);
  BOOST_TEST(p.pipelines == 2u);
  BOOST_TEST(p.stages.size() == 8u);
  BOOST_TEST(p.micro_batch_sizes.size() == 16u);
  BOOST_TEST(std::all_of(p.micro_batch_sizes.begin(), p.micro_batch_sizes.end(), [](auto m) { return m == 8u; }));
  // Sequential: pipeline 1 lands on the slow server, so its speed bounds each stage.
  BOOST_TEST(spec.cluster.devices[p.devices[1][0]].name == "slow/gpu0");
  double forward = 0;
  for (Cut at = p.stages[0].begin; at < p.stages[0].end; ++at.block) forward += spec.profile.blocks[at.block].forward_ms;
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

BOOST_AUTO_TEST_CASE(impossible_shapes_are_bad_input_naming_the_key) {
  auto too_many = make_plan(job("vgg16-4dev.toml", {"plan.stages=3", "plan.pipelines=2"}), registry());
  BOOST_REQUIRE(!too_many.ok());
  BOOST_TEST(exit_status(too_many.error().code) == 2);
  BOOST_TEST(contains(too_many.error().message, "plan.stages: 3 stages × 2 pipelines need 6 devices; cluster '4dev-one-server' has 4"),
             too_many.error().message);

  auto uneven = make_plan(job("vgg16-4dev.toml", {"plan.stages=2", "plan.pipelines=2", "train.batch_size=127"}), registry());
  BOOST_REQUIRE(!uneven.ok());
  BOOST_TEST(contains(uneven.error().message, "train.batch_size: 127 samples do not split evenly over 2 pipelines"),
             uneven.error().message);

  auto tiny = make_plan(job("vgg16-4dev.toml", {"train.batch_size=4"}), registry());
  BOOST_REQUIRE(!tiny.ok());
  BOOST_TEST(contains(tiny.error().message, "plan.micro_batches: 8 micro-batches need at least as many samples"),
             tiny.error().message);
}
