// Value types validate themselves with messages that name the offending entry; units
// parse as people write them.
#define BOOST_TEST_MODULE value_types
#include <boost/test/unit_test.hpp>

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/planner.hpp>

#include "test_support.hpp"

#include "base/units.hpp"

#include <limits>

using namespace actorpipe;
using test::contains;

namespace {

ModelProfile three_blocks() {
  ModelProfile p;
  p.name = "m";
  p.batch_size = 4;
  for (int i = 0; i < 3; ++i)
    p.blocks.push_back({"b" + std::to_string(i), 1.0, 2.0, 10, 100, 5, {}});
  return p;
}

ClusterSpec two_devices() {
  ClusterSpec c;
  c.name = "c";
  c.network = {1e9, 1e-6};
  Server s;
  s.name = "s";
  s.nic_bandwidth = 1e9;
  s.pcie_switches = {{16e9, 0}};
  s.host_bridges = {{16e9}};
  c.servers = {s};
  c.devices = {{"s/gpu0", "g", 1.0, 1ull << 30, 500e9, 0, 0, -1}, {"s/gpu1", "g", 1.0, 1ull << 30, 500e9, 0, 0, -1}};
  return c;
}

Plan two_stage_plan() {
  Plan plan;
  plan.pipelines = 1;
  plan.stages = {{{0, 0}, {2, 0}, {}}, {{2, 0}, {3, 0}, {}}};
  plan.devices = {{0, 1}};
  plan.batch_size = 8;
  plan.schedule.micro_batch_sizes = {4, 4};
  return plan;
}

} // namespace

BOOST_AUTO_TEST_CASE(profile_rejects_negative_and_nan_times) {
  ModelProfile p = three_blocks();
  BOOST_TEST(p.validate().ok());
  p.blocks[1].backward_ms = -0.5;
  auto s = p.validate();
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "block 1 'b1': backward time"), s.error().message);
  p.blocks[1].backward_ms = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(!p.validate().ok());
  BOOST_TEST(!ModelProfile{}.validate().ok());
}

BOOST_AUTO_TEST_CASE(profile_checks_sub_blocks_against_their_block) {
  ModelProfile p = three_blocks();
  p.blocks[2].sub_blocks = {{"attn", 0.5, 1.0, 3, 50, 2}, {"mlp", 0.5, 1.0, 10, 50, 3}};
  BOOST_TEST(p.validate().ok());
  BOOST_TEST(p.units(true).size() == 4u);
  BOOST_TEST(p.units(false).size() == 3u);
  BOOST_TEST((p.units(true)[3].begin == Cut{2, 1}));
  p.blocks[2].sub_blocks[1].backward_ms = -1.0;
  auto negative = p.validate();
  BOOST_REQUIRE(!negative.ok());
  BOOST_TEST(contains(negative.error().message, "block 2 'b2' sub-block 1 'mlp': times must be non-negative"),
             negative.error().message);
  p.blocks[2].sub_blocks[1].backward_ms = 1.0;
  p.blocks[2].sub_blocks[1].parameter_bytes = 51;
  auto s = p.validate();
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "block 2 'b2': parameter or stash bytes differ"), s.error().message);
}

BOOST_AUTO_TEST_CASE(cluster_rejects_zero_bandwidth_and_dangling_indices) {
  ClusterSpec c = two_devices();
  BOOST_TEST(c.validate().ok());
  c.servers[0].nic_bandwidth = 0;
  auto s = c.validate();
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "server 's': NIC bandwidth must be positive"), s.error().message);

  c = two_devices();
  c.devices[1].pcie_switch = 3;
  s = c.validate();
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "device 1 's/gpu1': PCIe switch 3 does not exist"), s.error().message);

  c = two_devices();
  c.devices[1].name = "s/gpu0";
  BOOST_TEST(!c.validate().ok());
  c = two_devices();
  c.network.bandwidth = 0;
  BOOST_TEST(!c.validate().ok());
}

BOOST_AUTO_TEST_CASE(plan_names_missing_devices_and_gaps) {
  const ModelProfile profile = three_blocks();
  const ClusterSpec cluster = two_devices();
  Plan plan = two_stage_plan();
  BOOST_TEST(plan.validate(profile, cluster).ok());

  plan.devices = {{0, 7}};
  auto s = plan.validate(profile, cluster);
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "pipeline 0 stage 1: device 7 does not exist"), s.error().message);

  plan = two_stage_plan();
  plan.devices = {{1, 1}};
  s = plan.validate(profile, cluster);
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "already runs another stage"), s.error().message);

  plan = two_stage_plan();
  plan.stages[1].begin = {1, 0};
  s = plan.validate(profile, cluster);
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(contains(s.error().message, "stage 1: does not start where the previous stage ends"), s.error().message);

  plan = two_stage_plan();
  plan.schedule.micro_batch_sizes = {4, 3};
  BOOST_TEST(!plan.validate(profile, cluster).ok());
}

BOOST_AUTO_TEST_CASE(stage_block_ranges_read_naturally) {
  StagePlan whole{{2, 0}, {5, 0}, {}};
  BOOST_TEST(describe_blocks(whole) == "2-4");
  BOOST_TEST(first_block(whole) == 2u);
  BOOST_TEST(last_block(whole) == 4u);
  StagePlan split{{2, 1}, {5, 1}, {}};
  BOOST_TEST(describe_blocks(split) == "2.1-5.0");
  BOOST_TEST(last_block(split) == 5u);
}

BOOST_AUTO_TEST_CASE(batches_split_evenly) {
  BOOST_TEST((split_batch(10, 4) == std::vector<std::uint32_t>{3, 3, 2, 2}));
  BOOST_TEST((split_batch(8, 2) == std::vector<std::uint32_t>{4, 4}));
}

BOOST_AUTO_TEST_CASE(units_parse_with_their_factors) {
  BOOST_TEST(*units::parse_bytes("32 GiB") == 32ull << 30);
  BOOST_TEST(*units::parse_bytes("16KB") == 16000u);
  BOOST_TEST(*units::parse_bytes("512") == 512u);
  BOOST_TEST(*units::parse_bandwidth("25 Gb/s") == 25e9 / 8);
  BOOST_TEST(*units::parse_bandwidth("16 GB/s") == 16e9);
  BOOST_TEST(*units::parse_duration("5 us") == 5e-6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(*units::parse_duration("1.5ms") == 1.5e-3, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(!units::parse_bytes("lots").ok());
  BOOST_TEST(!units::parse_bytes("-3 GiB").ok());
  auto unknown = units::parse_bandwidth("10 furlongs");
  BOOST_REQUIRE(!unknown.ok());
  BOOST_TEST(contains(unknown.error().message, "unknown bandwidth unit 'furlongs'"));
}
