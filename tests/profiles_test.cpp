// Profile import: PipeDream graph.txt (ordering, DAG collapse, totals) and our TOML
// format (round trip, sub-blocks, errors).
#define BOOST_TEST_MODULE profiles
#include <boost/test/unit_test.hpp>

#include <actorpipe/profile_io.hpp>

#include "test_support.hpp"

#include "base/input_file.hpp"

#include <cmath>

using namespace actorpipe;
using actorpipe::test::ScratchDir;
using test::contains;

namespace {

std::string pipedream(const std::string& model) {
  return (test::source_root() / "configs/profiles/pipedream" / (model + ".txt")).string();
}

/// PipeDream's image profiles were taken at batch 128: vgg16's input is
/// 77,070,336 bytes = 128 × 3 × 224 × 224 × 4.
constexpr std::uint32_t pipedream_batch = 128;

ModelProfile load(const std::string& path) {
  auto profile = load_profile(path, {ProfileFormat::automatic, pipedream_batch});
  REQUIRE_OK(profile);
  return *profile;
}

/// Expected totals of every non-input node, computed from the files with awk:
///   awk -F' -- ' 'NF==3 && $2 !~ /^Input/ {split($3,a,", "); for(i in a){split(a[i],kv,"=");
///                 v[kv[1]]+=kv[2]}; n++} END {print n, v["forward_compute_time"], ...}'
struct Totals {
  const char* model;
  std::size_t blocks;
  double forward_ms;
  double backward_ms;
  double parameter_bytes;
};
constexpr Totals expected_totals[] = {
    {"vgg16", 40, 233.902, 438.633, 553430176}, {"resnet50", 176, 182.488, 260.931, 102228128},
    {"gnmt", 45, 33.533, 55.883, 775063808},    {"densenet121", 428, 177.404, 148.751, 31915424},
    {"alexnet", 22, 44.801, 40.520, 244403360}, {"resnet101", 346, 197.306, 213.786, 178196640},
};

/// A PipeDream node line whose figures are all 1 (parameters 0).
std::string node(const std::string& id, const std::string& description) {
  return id + " -- " + description +
         " -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=0\n";
}

} // namespace

BOOST_AUTO_TEST_CASE(pipedream_totals_match_independent_sums) {
  for (const Totals& expected : expected_totals) {
    BOOST_TEST_CONTEXT(expected.model) {
      const ModelProfile profile = load(pipedream(expected.model));
      BOOST_TEST(profile.blocks.size() == expected.blocks);
      BOOST_TEST(std::abs(profile.total_forward_ms() - expected.forward_ms) < 1e-6);
      BOOST_TEST(std::abs(profile.total_backward_ms() - expected.backward_ms) < 1e-6);
      BOOST_TEST(static_cast<double>(profile.total_parameter_bytes()) == expected.parameter_bytes);
      BOOST_TEST(profile.batch_size == pipedream_batch);
      BOOST_TEST(profile.validate().ok());
    }
  }
}

BOOST_AUTO_TEST_CASE(vgg16_chain_keeps_layer_outputs_and_drops_the_input) {
  const ModelProfile vgg = load(pipedream("vgg16"));
  // node1 is the input (77070336 bytes); node2 is the first conv.
  BOOST_TEST(vgg.input_bytes == 77070336u);
  BOOST_TEST(contains(vgg.blocks.front().name, "node2 Conv2d(3, 64"));
  // A chain: every cut carries exactly the output of the block before it.
  BOOST_TEST(vgg.blocks[0].output_bytes == 1644167168u);
  BOOST_TEST(vgg.blocks[0].stash_bytes_per_sample == 1644167168u / pipedream_batch);
  BOOST_TEST(vgg.input_bytes == pipedream_batch * 3u * 224u * 224u * 4u);
}

BOOST_AUTO_TEST_CASE(resnet50_branches_collapse_to_cut_bytes) {
  const ModelProfile resnet = load(pipedream("resnet50"));
  // Inside a residual block the cut also carries the skip connection, so some cut
  // carries more than the output of the block just before it; no cut carries less.
  bool some_cut_carries_more = false;
  std::uint64_t largest = 0;
  for (const Block& block : resnet.blocks)
    largest = std::max(largest, block.output_bytes);
  for (std::size_t b = 0; b + 1 < resnet.blocks.size(); ++b)
    if (resnet.blocks[b].output_bytes > resnet.blocks[b].stash_bytes_per_sample * pipedream_batch + pipedream_batch)
      some_cut_carries_more = true;
  BOOST_TEST(some_cut_carries_more);
  // Topological order: the file lists node77 first, but the chain starts at the stem.
  BOOST_TEST(contains(resnet.blocks.front().name, "node2 "));
  BOOST_TEST(largest > 0u);
}

BOOST_AUTO_TEST_CASE(pipedream_order_does_not_depend_on_line_order) {
  ScratchDir dir;
  const std::string text =
      "node3 -- C -- forward_compute_time=3, backward_compute_time=3, activation_size=30, parameter_size=0\n"
      "node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=10, parameter_size=4\n"
      "node2 -- B -- forward_compute_time=2, backward_compute_time=2, activation_size=20, parameter_size=0\n"
      "node4 -- D -- forward_compute_time=4, backward_compute_time=4, activation_size=40, parameter_size=8\n"
      "node2 -- node4\nnode1 -- node2\nnode1 -- node3\nnode3 -- node4\n";
  const ModelProfile p = load(dir.write("diamond.txt", text));
  BOOST_REQUIRE(p.blocks.size() == 4u);
  BOOST_TEST(p.blocks[0].name == "node1 A");
  BOOST_TEST(p.blocks[1].name == "node2 B");
  BOOST_TEST(p.blocks[2].name == "node3 C");
  BOOST_TEST(p.blocks[3].name == "node4 D");
  // After A both A's output (to C) and... A feeds B and C: crossing A|B = A's 10 bytes.
  BOOST_TEST(p.blocks[0].output_bytes == 10u);
  // After B: A (still needed by C) + B (needed by D).
  BOOST_TEST(p.blocks[1].output_bytes == 30u);
  // After C: B and C, both needed by D.
  BOOST_TEST(p.blocks[2].output_bytes == 50u);
  // The last block's output leaves the model.
  BOOST_TEST(p.blocks[3].output_bytes == 40u);
}

BOOST_AUTO_TEST_CASE(pipedream_errors_name_file_and_line) {
  ScratchDir dir;
  const ProfileImportOptions with_batch{ProfileFormat::automatic, 8};
  auto negative = load_profile(
      dir.write(
          "neg.txt",
          node("node1", "A") +
              "node2 -- B -- forward_compute_time=-2, backward_compute_time=1, activation_size=1, parameter_size=0\n"
              "node1 -- node2\n"),
      with_batch);
  BOOST_REQUIRE(!negative.ok());
  BOOST_TEST(contains(negative.error().message, "neg.txt:2: node2: forward_compute_time: -2 is negative"),
             negative.error().message);

  auto cycle = load_profile(
      dir.write("cycle.txt", node("node1", "A") + node("node2", "B") + "node1 -- node2\nnode2 -- node1\n"), with_batch);
  BOOST_REQUIRE(!cycle.ok());
  BOOST_TEST(contains(cycle.error().message, "cycle.txt:1: node 'node1' is on a cycle"), cycle.error().message);

  // node1 feeds a cycle between node3 and node4, which feeds node2: the message names a
  // node on the cycle, not the first one waiting.
  auto downstream = load_profile(
      dir.write("downstream.txt", node("node1", "A") + node("node2", "B") + node("node3", "C") + node("node4", "D") +
                                      "node1 -- node3\nnode3 -- node4\nnode4 -- node3\nnode4 -- node2\n"),
      with_batch);
  BOOST_REQUIRE(!downstream.ok());
  BOOST_TEST(contains(downstream.error().message, "downstream.txt:3: node 'node3' is on a cycle"),
             downstream.error().message);

  // vgg16 cut short after its last node line: its edges are gone.
  const std::string vgg16 = read_file(pipedream("vgg16")).value();
  const std::string cut = vgg16.substr(0, vgg16.find("node1 -- node2"));
  auto incomplete = load_profile(dir.write("cut.txt", cut), with_batch);
  BOOST_REQUIRE(!incomplete.ok());
  BOOST_TEST(contains(incomplete.error().message, "has no edges: the graph is incomplete"), incomplete.error().message);

  auto dangling = load_profile(dir.write("edge.txt", node("node1", "A") + "node1 -- node9\n"), with_batch);
  BOOST_REQUIRE(!dangling.ok());
  BOOST_TEST(contains(dangling.error().message, "edge.txt:2: edge to unknown node 'node9'"), dangling.error().message);

  auto no_batch = load_profile(pipedream("vgg16"), {ProfileFormat::pipedream, 0});
  BOOST_REQUIRE(!no_batch.ok());
  BOOST_TEST(contains(no_batch.error().message, "do not record their batch size"), no_batch.error().message);

  auto gnmt = load_profile(pipedream("gnmt"), {ProfileFormat::automatic, 128});
  BOOST_REQUIRE(gnmt.ok());
  // node7 (an LSTM) lists three outputs: [6291456.0; 131072.0; 131072.0].
  bool found = false;
  for (const Block& block : gnmt->blocks)
    if (block.name.starts_with("node7 ")) found = block.stash_bytes_per_sample == (6291456u + 2 * 131072u) / 128;
  BOOST_TEST(found);

  auto huge = load_profile(
      dir.write(
          "huge.txt",
          "node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=1e300\n"),
      with_batch);
  BOOST_REQUIRE(!huge.ok());
  BOOST_TEST(contains(huge.error().message, "huge.txt:1: node1: parameter_size: "), huge.error().message);
  BOOST_TEST(contains(huge.error().message, " is too large"), huge.error().message);

  auto missing = load_profile(dir.write("short.txt", "node1 -- A -- forward_compute_time=1, backward_compute_time=1\n"),
                              with_batch);
  BOOST_REQUIRE(!missing.ok());
  BOOST_TEST(contains(missing.error().message, "short.txt:1: node1: missing activation_size"), missing.error().message);

  auto absent = load_profile((dir.path() / "absent.txt").string());
  BOOST_REQUIRE(!absent.ok());
  BOOST_TEST(contains(absent.error().message, "absent.txt: file not found"), absent.error().message);
}

BOOST_AUTO_TEST_CASE(toml_round_trip_is_exact) {
  ModelProfile original = load(pipedream("resnet50"));
  // Add sub-blocks to one block so they round-trip too.
  original.warmup_passes = 7; // how a measured profile was measured
  original.spread = 0.0375;
  Block& block = original.blocks[5];
  block.sub_blocks = {{"attention", block.forward_ms * 0.25, block.backward_ms * 0.5, 1234, block.parameter_bytes / 2,
                       block.stash_bytes_per_sample / 2},
                      {"mlp", block.forward_ms * 0.75, block.backward_ms * 0.5, block.output_bytes,
                       block.parameter_bytes - block.parameter_bytes / 2,
                       block.stash_bytes_per_sample - block.stash_bytes_per_sample / 2}};
  block.forward_ms = block.sub_blocks[0].forward_ms + block.sub_blocks[1].forward_ms;
  block.backward_ms = block.sub_blocks[0].backward_ms + block.sub_blocks[1].backward_ms;
  // Fixed parts, on a sub-block and on a block of its own.
  block.sub_blocks[1].forward_fixed_ms = block.sub_blocks[1].forward_ms * 0.125;
  block.sub_blocks[1].backward_fixed_ms = block.sub_blocks[1].backward_ms * 0.25;
  block.forward_fixed_ms = block.sub_blocks[1].forward_fixed_ms;
  block.backward_fixed_ms = block.sub_blocks[1].backward_fixed_ms;
  original.blocks[2].forward_fixed_ms = original.blocks[2].forward_ms * 0.5;
  // What a measured profile knows besides: its precision, and what units hold while they
  // run (a block's is its largest sub-block's).
  original.precision = Precision::bf16;
  block.sub_blocks[0].workspace_bytes_per_sample = 4096;
  block.sub_blocks[1].workspace_bytes_per_sample = 1024;
  block.workspace_bytes_per_sample = 4096;
  original.blocks[2].workspace_bytes_per_sample = 777;
  // The input gradient's part of a backward, on one sub-block (the other's counts half
  // in its block's sum) and on a block of its own.
  block.sub_blocks[0].input_gradient_ms = block.sub_blocks[0].backward_ms * 0.625;
  block.input_gradient_ms = block.sub_blocks[0].backward_ms * 0.625 + block.sub_blocks[1].backward_ms * 0.5;
  original.blocks[3].input_gradient_ms = 0.0;
  BOOST_REQUIRE(original.validate().ok());

  ScratchDir dir;
  const std::string path = (dir.path() / "resnet50.toml").string();
  BOOST_REQUIRE(save_profile(original, path).ok());
  const ModelProfile copy = load(path);
  BOOST_TEST(copy.name == original.name);
  BOOST_TEST(copy.batch_size == original.batch_size);
  BOOST_TEST(copy.input_bytes == original.input_bytes);
  BOOST_TEST(copy.warmup_passes == original.warmup_passes);
  BOOST_TEST(copy.spread == original.spread);
  BOOST_TEST((copy.precision == Precision::bf16));
  BOOST_REQUIRE(copy.blocks.size() == original.blocks.size());
  for (std::size_t b = 0; b < copy.blocks.size(); ++b) {
    BOOST_TEST_CONTEXT("block " << b) {
      BOOST_TEST(copy.blocks[b].name == original.blocks[b].name);
      BOOST_TEST(copy.blocks[b].forward_ms == original.blocks[b].forward_ms);
      BOOST_TEST(copy.blocks[b].backward_ms == original.blocks[b].backward_ms);
      BOOST_TEST(copy.blocks[b].forward_fixed_ms == original.blocks[b].forward_fixed_ms);
      BOOST_TEST(copy.blocks[b].backward_fixed_ms == original.blocks[b].backward_fixed_ms);
      BOOST_TEST(copy.blocks[b].output_bytes == original.blocks[b].output_bytes);
      BOOST_TEST(copy.blocks[b].parameter_bytes == original.blocks[b].parameter_bytes);
      BOOST_TEST(copy.blocks[b].stash_bytes_per_sample == original.blocks[b].stash_bytes_per_sample);
      BOOST_TEST(copy.blocks[b].workspace_bytes_per_sample == original.blocks[b].workspace_bytes_per_sample);
      BOOST_TEST((copy.blocks[b].input_gradient_ms == original.blocks[b].input_gradient_ms));
      BOOST_TEST(copy.blocks[b].sub_blocks.size() == original.blocks[b].sub_blocks.size());
    }
  }
  BOOST_TEST(copy.blocks[5].sub_blocks[0].name == "attention");
  BOOST_TEST(copy.blocks[5].sub_blocks[0].output_bytes == 1234u);
  BOOST_TEST(copy.blocks[5].sub_blocks[1].forward_fixed_ms == original.blocks[5].sub_blocks[1].forward_fixed_ms);
  BOOST_TEST(copy.blocks[2].forward_fixed_ms > 0);
  BOOST_TEST(copy.blocks[5].sub_blocks[1].workspace_bytes_per_sample == 1024u);
  BOOST_TEST((copy.blocks[5].sub_blocks[0].input_gradient_ms == original.blocks[5].sub_blocks[0].input_gradient_ms));
  BOOST_TEST(!copy.blocks[5].sub_blocks[1].input_gradient_ms.has_value()); // unmeasured stays so
  BOOST_TEST(!copy.blocks[0].input_gradient_ms.has_value());
  BOOST_TEST(copy.blocks[2].workspace_bytes_per_sample == 777u);
  // A profile that does not say its precision stands for any.
  BOOST_TEST(!load(pipedream("resnet50")).precision.has_value());
  // And the text is stable: writing the copy gives the same file.
  BOOST_TEST(to_toml(copy) == to_toml(original));
}

BOOST_AUTO_TEST_CASE(toml_profile_errors_name_file_line_and_key) {
  ScratchDir dir;
  auto negative = load_profile(
      dir.write("neg.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\nforward_ms = -1.0\n"));
  BOOST_REQUIRE(!negative.ok());
  BOOST_TEST(contains(negative.error().message, "neg.toml:5:14: blocks[0].forward_ms: -1 is out of range"),
             negative.error().message);

  auto spread =
      load_profile(dir.write("spread.toml", "name = \"x\"\nbatch_size = 8\nspread = -0.5\n[[blocks]]\nname = \"a\"\n"));
  BOOST_REQUIRE(!spread.ok());
  BOOST_TEST(contains(spread.error().message, "spread.toml:3:10: spread: -0.5 is out of range"),
             spread.error().message);

  auto fp8 = load_profile(dir.write("fp8.toml", "name = \"x\"\nbatch_size = 8\nprecision = \"fp8\"\n[[blocks]]\n"
                                                "name = \"a\"\nforward_ms = 1.0\nbackward_ms = 1.0\n"));
  BOOST_REQUIRE(!fp8.ok());
  BOOST_TEST(contains(fp8.error().message, "fp8.toml:3:13: precision: "), fp8.error().message);

  // A block's workspace is its largest sub-block's: the sub-blocks run one at a time.
  ModelProfile summed = load(pipedream("resnet50"));
  summed.blocks[1].sub_blocks = {{"a", summed.blocks[1].forward_ms, summed.blocks[1].backward_ms,
                                  summed.blocks[1].output_bytes, summed.blocks[1].parameter_bytes,
                                  summed.blocks[1].stash_bytes_per_sample}};
  summed.blocks[1].sub_blocks[0].workspace_bytes_per_sample = 10;
  summed.blocks[1].workspace_bytes_per_sample = 20;
  const Status workspace = summed.validate();
  BOOST_REQUIRE(!workspace.ok());
  BOOST_TEST(contains(workspace.error().message, "workspace bytes differ from the largest of its sub-blocks'"),
             workspace.error().message);

  // An input gradient's part is part of the backward, and a block's is its sub-blocks' sum.
  auto over = load_profile(dir.write("over.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\n"
                                                  "forward_ms = 1.0\nbackward_ms = 2.0\ninput_gradient_ms = 2.5\n"));
  BOOST_REQUIRE(!over.ok());
  BOOST_TEST(contains(over.error().message, "over.toml"), over.error().message);
  BOOST_TEST(contains(over.error().message, "block 0 'a': input_gradient_ms must lie between 0 and the block's "
                                            "backward_ms"),
             over.error().message);
  ModelProfile split = load(pipedream("resnet50"));
  split.blocks[1].sub_blocks = {{"a", split.blocks[1].forward_ms, split.blocks[1].backward_ms,
                                 split.blocks[1].output_bytes, split.blocks[1].parameter_bytes,
                                 split.blocks[1].stash_bytes_per_sample}};
  split.blocks[1].sub_blocks[0].input_gradient_ms = 0.25 * split.blocks[1].backward_ms;
  BOOST_TEST(!split.validate().ok()); // the block's own is unset: half, not a quarter
  split.blocks[1].input_gradient_ms = split.blocks[1].sub_blocks[0].input_gradient_ms;
  BOOST_TEST(split.validate().ok());

  auto typo = load_profile(
      dir.write("typo.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\nforward_sm = 1.0\n"));
  BOOST_REQUIRE(!typo.ok());
  BOOST_TEST(
      contains(typo.error().message, "typo.toml:5:1: blocks[0].forward_sm: unknown key, did you mean 'forward_ms'?"),
      typo.error().message);

  auto huge = load_profile(dir.write("huge.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\nforward_ms "
                                                  "= 1.0\nbackward_ms = 1.0\noutput_bytes = 1e300\n"));
  BOOST_REQUIRE(!huge.ok());
  BOOST_TEST(contains(huge.error().message, "huge.toml:7:16: blocks[0].output_bytes: "), huge.error().message);
  BOOST_TEST(contains(huge.error().message, " is too large"), huge.error().message);

  // Nothing that planning rests on has a default: the batch the times are for, and each
  // unit's times.
  auto no_batch = load_profile(dir.write("nobatch.toml", "name = \"x\"\n[[blocks]]\nname = \"a\"\n"));
  BOOST_REQUIRE(!no_batch.ok());
  BOOST_TEST(contains(no_batch.error().message, "batch_size: missing"), no_batch.error().message);
  auto no_time = load_profile(
      dir.write("notime.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\nbackward_ms = 1.0\n"));
  BOOST_REQUIRE(!no_time.ok());
  BOOST_TEST(contains(no_time.error().message, "blocks[0].forward_ms: missing"), no_time.error().message);

  // A fixed part is part of its time: never more.
  auto fixed = load_profile(dir.write("fixed.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\n"
                                                    "forward_ms = 1.0\nbackward_ms = 1.0\nforward_fixed_ms = 1.5\n"));
  BOOST_REQUIRE(!fixed.ok());
  BOOST_TEST(contains(fixed.error().message, "fixed.toml"), fixed.error().message);
  BOOST_TEST(contains(fixed.error().message, "block 0 'a': forward_fixed_ms and backward_fixed_ms must lie between 0 "
                                             "and the block's forward_ms and backward_ms"),
             fixed.error().message);
  auto sub_fixed = load_profile(dir.write(
      "subfixed.toml", "name = \"x\"\nbatch_size = 8\n[[blocks]]\nname = \"a\"\n[[blocks.sub_blocks]]\nname = "
                       "\"s\"\nforward_ms = 1.0\nbackward_ms = 1.0\nbackward_fixed_ms = 2.0\n"));
  BOOST_REQUIRE(!sub_fixed.ok());
  BOOST_TEST(contains(sub_fixed.error().message, "block 0 'a' sub-block 0 's': forward_fixed_ms and backward_fixed_ms "
                                                 "must lie between 0 and the sub-block's"),
             sub_fixed.error().message);

  auto empty = load_profile(dir.write("empty.toml", "name = \"x\"\nbatch_size = 8\n"));
  BOOST_REQUIRE(!empty.ok());
  BOOST_TEST(contains(empty.error().message, "blocks: missing"), empty.error().message);
}
