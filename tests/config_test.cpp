// Job files: every class of mistake is one message naming FILE:LINE:COL and the key.
#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numbers>

#include <actorpipe/gpu.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/schedule_io.hpp>

#include "test_support.hpp"

#include "config/job_place.hpp"
#include "config/toml_reader.hpp"
#include "train/lr_schedule.hpp"

using namespace actorpipe;
using actorpipe::test::ScratchDir;
using test::contains;

namespace {

const char* tiny_profile = R"(name = "tiny"
batch_size = 8
[[blocks]]
name = "a"
forward_ms = 1.0
backward_ms = 2.0
parameter_bytes = 100
[[blocks]]
name = "b"
forward_ms = 1.0
backward_ms = 2.0
parameter_bytes = 100
)";

const char* inline_cluster = R"(
[cluster]
name = "two"
[[cluster.servers]]
name = "s"
devices = [{ count = 2, memory = "8 GiB" }]
)";

/// A job in a scratch folder, with the tiny profile beside it.
struct Job {
  ScratchDir dir;
  std::string path;
  explicit Job(const std::string& body, bool with_cluster = true) {
    dir.write("tiny.toml", tiny_profile);
    path = dir.write("job.toml",
                     std::string("[model]\nprofile = \"tiny.toml\"\n") + body + (with_cluster ? inline_cluster : ""));
  }
};

Error expect_error(const Result<JobSpec>& result) {
  BOOST_REQUIRE_MESSAGE(!result.ok(), "expected the job to be rejected");
  BOOST_TEST(exit_status(result.error().code) == 2);
  return result.error();
}

} // namespace

BOOST_AUTO_TEST_CASE(an_error_about_a_key_is_placed_where_the_job_sets_it_and_no_other_is_taken_for_one) {
  // The key travels as data (Error::bad_key), and so does the place it gets; a message
  // is never read for one. A message that only begins like a key ("train.txt: …", a
  // file) gets the fallback's place, where reading the message for a key had put it
  // nowhere.
  test::ScratchDir dir;
  auto job = load_job(dir.write("job.toml", test::cpu_cluster_toml(1, "1 GiB") +
                                                "[model]\nzoo = \"gpt\"\nwidth = 30\n[data]\ndataset = "
                                                "\"text\"\npath = \"train.txt\"\n"));
  REQUIRE_OK(job);
  const Error width =
      config::place_in_job(*job, Error::bad_key("model.width", "30 is not a multiple of model.heads"), "model");
  BOOST_TEST(width.message == job->where("model.width") + "30 is not a multiple of model.heads");
  BOOST_TEST(contains(width.message, "job.toml:"), width.message);
  BOOST_TEST(width.key == "model.width");
  BOOST_TEST((width.place == job->place_of("model.width")));
  BOOST_TEST(width.place->line > 0u);
  // Placed once: the first to know the place knew best.
  BOOST_TEST(config::place_in_job(*job, width, "data.path").message == width.message);
  const Error file = config::place_in_job(*job, Error::bad_input("train.txt: cannot open"), "data.path");
  BOOST_TEST(file.message == job->where("data.path") + "train.txt: cannot open");
  BOOST_TEST(job->where("model.width") != job->where("data.path"));
}

BOOST_AUTO_TEST_CASE(recompute_is_one_value_or_one_per_stage_and_a_wrong_one_is_named) {
  Job one("[plan]\nstages = 2\nrecompute = \"full\"\n");
  auto job = load_job(one.path);
  REQUIRE_OK(job);
  BOOST_TEST((job->plan.recompute == std::vector<Recompute>{Recompute::full}));
  Job each("[plan]\nstages = 2\nrecompute = [\"selective\", \"none\"]\n");
  job = load_job(each.path);
  REQUIRE_OK(job);
  BOOST_TEST((job->plan.recompute == std::vector<Recompute>{Recompute::selective, Recompute::none}));
  Job wrong("[plan]\nstages = 2\nrecompute = \"sometimes\"\n");
  job = load_job(wrong.path);
  BOOST_REQUIRE(!job);
  BOOST_TEST(contains(job.error().message, "plan.recompute: 'sometimes' is not one of none, full, selective"),
             job.error().message);
  BOOST_TEST(job.error().key == "plan.recompute");
}

BOOST_AUTO_TEST_CASE(valid_job_reads_every_section_and_resolves_paths) {
  Job job("[job]\nname = \"t\"\nseed = 7\n[train]\nbatch_size = 32\noptimizer = \"adam\"\n"
          "[plan]\nstages = 2\nmicro_batches = 4\n[plan.options.uniform]\nfoo = 3\n");
  auto spec = load_job(job.path);
  REQUIRE_OK(spec);
  BOOST_TEST(spec->job.name == "t");
  BOOST_TEST(spec->job.seed == 7u);
  BOOST_TEST(spec->train.batch_size == 32u);
  BOOST_TEST((spec->train.optimizer == Optimizer::adam));
  BOOST_TEST(spec->plan.stages == 2u);
  BOOST_TEST(spec->plan.micro_batches == 4u);
  BOOST_TEST(spec->plan.options.at("uniform").at("foo") == "3");
  BOOST_TEST(spec->profile.blocks.size() == 2u);
  BOOST_TEST(spec->cluster.devices.size() == 2u);
  // Relative paths are taken from the job file's folder, not the current one.
  BOOST_TEST(spec->model.profile == (job.dir.path() / "tiny.toml").string());
  // Defaults that were not written.
  BOOST_TEST(spec->plan.partitioner == "autopipe");
  BOOST_TEST(spec->plan.mapper == "hetero");
  BOOST_TEST(spec->plan.pipelines == auto_count);
}

BOOST_AUTO_TEST_CASE(syntax_error_names_file_line_and_column) {
  Job job("[plan\nstages = 2\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":3:"), error.message);
}

BOOST_AUTO_TEST_CASE(unknown_key_suggests_the_closest) {
  Job job("[plan]\npartitionr = \"uniform\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":4:1: plan.partitionr: unknown key, did you mean 'partitioner'?"),
             error.message);
}

BOOST_AUTO_TEST_CASE(a_key_of_a_table_set_beside_it_is_pointed_to_its_table) {
  // As Lua's plan(job, {stages = 2}) writes it: `stages` at the top, not in [plan].
  Job job("[plan]\npartitioner = \"uniform\"\n");
  const Error error = expect_error(load_job(job.path, {"stages=2"}));
  BOOST_TEST(contains(error.message, "stages: unknown key at this level, did you mean plan.stages?"), error.message);
  // A key that two tables have: both are named.
  Job both("[job]\nname = \"x\"\n[data]\nseed = 2\n");
  const Error seed = expect_error(load_job(both.path, {"seed=1"}));
  BOOST_TEST(contains(seed.message, "seed: unknown key at this level, did you mean job.seed or data.seed?"),
             seed.message);
}

BOOST_AUTO_TEST_CASE(unknown_section_suggests_the_closest) {
  Job job("[tarin]\nbatch_size = 3\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "tarin: unknown key, did you mean 'train'?"), error.message);
}

BOOST_AUTO_TEST_CASE(wrong_type_names_expected_and_found) {
  Job job("[plan]\nstages = \"four\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(
      contains(error.message, job.path + ":4:10: plan.stages: expected \"auto\" or a positive integer, found 'four'"),
      error.message);
}

BOOST_AUTO_TEST_CASE(the_learning_rate_schedule_clipping_and_evaluation_steps_are_read_and_checked) {
  Job job("[train]\nlr_schedule = \"cosine\"\nwarmup_steps = 100\nclip_norm = 1.5\neval_every = 50\n");
  auto spec = load_job(job.path);
  REQUIRE_OK(spec);
  BOOST_TEST((spec->train.lr_schedule == LrSchedule::cosine));
  BOOST_TEST(spec->train.warmup_steps == 100u);
  BOOST_TEST(spec->train.clip_norm == 1.5);
  BOOST_TEST(spec->train.eval_every == 50u);
  Job defaults("[train]\nlr = 0.1\n");
  spec = load_job(defaults.path);
  REQUIRE_OK(spec);
  BOOST_TEST((spec->train.lr_schedule == LrSchedule::constant));
  BOOST_TEST(spec->train.warmup_steps == 0u);
  BOOST_TEST(spec->train.clip_norm == 0.0);
  Job misspelt("[train]\nlr_schedule = \"cosinus\"\n");
  Error error = expect_error(load_job(misspelt.path));
  BOOST_TEST(contains(error.message, "train.lr_schedule: 'cosinus' is not one of constant, linear, cosine, did you "
                                     "mean 'cosine'?"),
             error.message);
  Job negative("[train]\nclip_norm = -1.0\n");
  error = expect_error(load_job(negative.path));
  BOOST_TEST(contains(error.message, negative.path + ":4:13: train.clip_norm: -1 is out of range [0, "), error.message);
  error = expect_error(load_job(defaults.path, {"train.warmup_steps=-3"}));
  BOOST_TEST(contains(error.message, "train.warmup_steps"), error.message);
}

BOOST_AUTO_TEST_CASE(the_learning_rate_warms_up_then_decays_as_pytorchs_schedulers_do) {
  // LinearLR from 1/warmup, then constant, LinearLR to 0 or CosineAnnealingLR over the
  // rest of the run (12 steps, 4 of them warming up).
  TrainOptions train;
  train.warmup_steps = 4;
  const auto at = [&](LrSchedule schedule, std::uint64_t step) {
    train.lr_schedule = schedule;
    return train::lr_factor(train, step, 12);
  };
  for (const LrSchedule schedule : {LrSchedule::constant, LrSchedule::linear, LrSchedule::cosine}) {
    BOOST_TEST(at(schedule, 1) == 0.25);
    BOOST_TEST(at(schedule, 4) == 1.0);
    BOOST_TEST(at(schedule, 5) == 1.0);
  }
  BOOST_TEST(at(LrSchedule::constant, 12) == 1.0);
  BOOST_TEST(at(LrSchedule::linear, 9) == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(at(LrSchedule::linear, 12) == 0.125, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(at(LrSchedule::cosine, 9) == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(at(LrSchedule::cosine, 12) == 0.5 * (1 + std::cos(std::numbers::pi * 7 / 8)),
             boost::test_tools::tolerance(1e-12));
  // A run shorter than its warm-up warms up throughout; without a warm-up, step 1 is
  // at the full rate.
  train.lr_schedule = LrSchedule::cosine;
  BOOST_TEST(train::lr_factor(train, 2, 2) == 0.5);
  train.warmup_steps = 0;
  BOOST_TEST(train::lr_factor(train, 1, 12) == 1.0);
  BOOST_TEST(train::lr_at(train, 1, 12) == train.lr);
}

BOOST_AUTO_TEST_CASE(out_of_range_value_is_rejected) {
  Job job("[plan]\npipelines = 0\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":4:13: plan.pipelines: 0 is out of range [1, "), error.message);
}

BOOST_AUTO_TEST_CASE(bad_choice_lists_the_allowed_values) {
  Job job("[train]\noptimizer = \"adamm\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "train.optimizer: 'adamm' is not one of sgd, adam, adamw, did you mean 'adam'?"),
             error.message);
  // BatchNorm's buffers across pipelines: broadcast by default, as DDP does.
  Job buffers("[train]\nbuffers = \"averaged\"\n");
  const Error wrong = expect_error(load_job(buffers.path));
  BOOST_TEST(contains(wrong.message, "train.buffers: 'averaged' is not one of broadcast, average"), wrong.message);
  auto average = load_job(buffers.path, {"train.buffers=average"});
  REQUIRE_OK(average);
  BOOST_TEST((average->train.buffers == BufferSync::average));
  auto plain = load_job(job.path, {"train.optimizer=sgd"});
  REQUIRE_OK(plain);
  BOOST_TEST((plain->train.buffers == BufferSync::broadcast));
  // Freed memory is kept for reuse unless a job says otherwise.
  BOOST_TEST(plain->train.retain_memory);
  auto system = load_job(job.path, {"train.optimizer=sgd", "train.retain_memory=false"});
  REQUIRE_OK(system);
  BOOST_TEST(!system->train.retain_memory);
  Job retain("[train]\nretain_memory = \"yes\"\n");
  const Error not_bool = expect_error(load_job(retain.path));
  BOOST_TEST(contains(not_bool.message, "train.retain_memory"), not_bool.message);
  // CUDA graphs: where stages share a GPU unless a job says true or false; anything
  // else is named, with what was found.
  BOOST_TEST((plain->train.cuda_graphs == CudaGraphs::shared_gpus));
  for (const auto& [value, mode] : {std::pair{"true", CudaGraphs::on}, std::pair{"false", CudaGraphs::off},
                                    std::pair{"\"auto\"", CudaGraphs::shared_gpus}}) {
    auto graphs = load_job(job.path, {"train.optimizer=sgd", std::string("train.cuda_graphs=") + value});
    REQUIRE_OK(graphs);
    BOOST_TEST((graphs->train.cuda_graphs == mode), value);
  }
  for (const auto& [value, found] : {std::pair{"1", "found an integer"}, std::pair{"\"on\"", "found 'on'"}}) {
    Job graphs_word(std::string("[train]\ncuda_graphs = ") + value + "\n");
    const Error graphs_wrong = expect_error(load_job(graphs_word.path));
    BOOST_TEST(contains(graphs_wrong.message, "train.cuda_graphs"), graphs_wrong.message);
    BOOST_TEST(contains(graphs_wrong.message, "expected true, false or \"auto\", " + std::string(found)),
               graphs_wrong.message);
  }
  // Precision: fp32 unless a job asks for bf16 or fp16; anything else is named.
  BOOST_TEST((plain->train.precision == Precision::fp32));
  auto bf16 = load_job(job.path, {"train.optimizer=sgd", "train.precision=bf16"});
  REQUIRE_OK(bf16);
  BOOST_TEST((bf16->train.precision == Precision::bf16));
  auto fp16 = load_job(job.path, {"train.optimizer=sgd", "train.precision=fp16"});
  REQUIRE_OK(fp16);
  BOOST_TEST((fp16->train.precision == Precision::fp16));
  Job half("[train]\nprecision = \"half\"\n");
  const Error not_a_precision = expect_error(load_job(half.path));
  BOOST_TEST(contains(not_a_precision.message, "train.precision: 'half' is not one of fp32, bf16, fp16"),
             not_a_precision.message);
}

BOOST_AUTO_TEST_CASE(toml_nested_beyond_what_is_read_is_refused_before_it_is_parsed) {
  // TOML++ parses nesting by recursion: 50,000 dotted parts or nested arrays overflowed
  // the stack (a crash) in a job, profile, cluster or schedule file, or a --set.
  ScratchDir dir;
  std::string dotted = "a";
  for (int i = 0; i < 50000; ++i)
    dotted += ".a";
  const std::string nested = std::string(100000, '[') + std::string(100000, ']');
  std::string lines = "x = [\n";
  for (int i = 0; i < 1000; ++i)
    lines += "[\n";
  for (const auto& [name, text, what] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"header.toml", "[" + dotted + "]\n", "1:129: a dotted key or table name deeper than 64"},
           {"key.toml", "name = \"x\"\n" + dotted + " = 1\n", "2:128: a dotted key or table name deeper than 64"},
           {"array.toml", "x = " + nested + "\n", "1:69: arrays and inline tables nested deeper than 64"},
           {"lines.toml", lines, "65:1: arrays and inline tables nested deeper than 64"}})
    BOOST_TEST_CONTEXT(name) {
      const std::string path = dir.write(name, text);
      for (const auto& error : {load_job(path).error(), load_profile(path).error(), load_schedule(path).error()}) {
        BOOST_TEST(exit_status(error.code) == 2);
        BOOST_TEST(contains(error.message, path + ":" + what + ": actorpipe reads no deeper"), error.message);
      }
    }
  // Nesting within the bound, across lines and in strings, reads as before.
  const std::string fine = dir.write("fine.toml", "x = [\n  [1, 2],\n  [3, [4, 5]],\n]\ns = \"[[[[{{{{...\"\n");
  REQUIRE_OK(config::parse_toml_file(fine));
  Job job("[train]\noptimizer = \"sgd\"\n");
  const Error key = expect_error(load_job(job.path, {dotted + "=1"}));
  BOOST_TEST(contains(key.message, "--set " + dotted.substr(0, 20)), key.message.substr(0, 200));
  BOOST_TEST(contains(key.message, ": a key of 50001 parts; actorpipe reads at most 64"), key.message.substr(0, 200));
  // A value too deep to read is a bare string, as any other that is no TOML value.
  const Error value = expect_error(load_job(job.path, {"train.lr=" + nested}));
  BOOST_TEST(contains(value.message, "train.lr"), value.message.substr(0, 200));
}

BOOST_AUTO_TEST_CASE(a_job_name_too_long_for_a_folder_is_refused_when_read) {
  // 300 characters planned, then failed the run (exit 1) when its folder was made.
  Job job("[job]\nname = \"" + std::string(300, 'n') + "\"\n[train]\noptimizer = \"sgd\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "job.name: a name of 300 characters; at most 128"), error.message);
  REQUIRE_OK(load_job(job.path, {"job.name=" + std::string(128, 'n')}));
}

BOOST_AUTO_TEST_CASE(a_64_bit_count_keeps_its_documented_bound) {
  // train.steps is unsigned 64-bit: its bound of 2^40 was dropped on the way to the
  // signed reader, and 2^63 − 1 steps trained until killed.
  Job job("[train]\noptimizer = \"sgd\"\n");
  for (const char* steps : {"1099511627777", "9223372036854775807"})
    BOOST_TEST_CONTEXT(steps) {
      const Error error = expect_error(load_job(job.path, {std::string("train.steps=") + steps}));
      BOOST_TEST(contains(error.message, "train.steps: " + std::string(steps) + " is out of range [0, 1099511627776]"),
                 error.message);
    }
  auto most = load_job(job.path, {"train.steps=1099511627776"});
  REQUIRE_OK(most);
  BOOST_TEST(most->train.steps == max_steps);
}

BOOST_AUTO_TEST_CASE(a_profile_measured_in_another_precision_than_the_job_trains_in_is_refused) {
  // Measured profiles say their precision; a hand-written one (tiny.toml) stands for any.
  Job job("[train]\noptimizer = \"sgd\"\n");
  REQUIRE_OK(load_job(job.path, {"train.precision=bf16"}));
  job.dir.write("tiny.toml", "precision = \"bf16\"\n" + std::string(tiny_profile));
  REQUIRE_OK(load_job(job.path, {"train.precision=bf16"}));
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":2:11: model.profile: "), error.message);
  BOOST_TEST(contains(error.message, "tiny.toml was measured in bf16 but the job trains in fp32 (train.precision)"),
             error.message);
}

BOOST_AUTO_TEST_CASE(tuning_keys_are_checked) {
  Job job("[plan]\ntune = \"profiles\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "plan.tune: 'profiles' is not one of simulate, profile, did you mean 'profile'?"),
             error.message);
  auto tuned = load_job(job.path, {"plan.tune=profile", "plan.tune_candidates=4", "plan.tune_steps=5"});
  REQUIRE_OK(tuned);
  BOOST_TEST((tuned->plan.tune == Tuning::profile));
  BOOST_TEST(tuned->plan.tune_candidates == 4u);
  BOOST_TEST(tuned->plan.tune_steps == 5u);
  // No more candidates than the planner keeps shapes; at least one step to time.
  const Error many = expect_error(load_job(job.path, {"plan.tune=profile", "plan.tune_candidates=6"}));
  BOOST_TEST(contains(many.message, "plan.tune_candidates: 6 is out of range [2, 5]"), many.message);
  const Error few = expect_error(load_job(job.path, {"plan.tune=profile", "plan.tune_steps=2"}));
  BOOST_TEST(contains(few.message, "plan.tune_steps: 2 is out of range [3, 1000]"), few.message);
}

BOOST_AUTO_TEST_CASE(evaluations_come_every_at_least_one_epoch) {
  Job job("[train]\nevaluate_every = 0\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":4:18: train.evaluate_every: 0 is out of range [1, "), error.message);
  auto spaced = load_job(job.path, {"train.evaluate_every=5"});
  REQUIRE_OK(spaced);
  BOOST_TEST(spaced->train.evaluate_every == 5u);
}

BOOST_AUTO_TEST_CASE(plan_sync_names_a_plugin_which_the_planner_checks) {
  Job job("[plan]\nstages = 2\n");
  // Any name reads: sync policies are plugins, checked against those found when planning
  // (plan_test: a_sync_policy_is_a_plugin_checked_when_planning).
  auto named = load_job(job.path, {"plan.sync=\"my-policy\""});
  REQUIRE_OK(named);
  BOOST_TEST(named->plan.sync == "my-policy");
  const Error error = expect_error(load_job(job.path, {"plan.sync=3"}));
  BOOST_TEST(contains(error.message, "plan.sync"), error.message);
  BOOST_TEST(contains(error.message, "expected a string"), error.message);
}

BOOST_AUTO_TEST_CASE(a_job_name_that_is_not_a_plain_name_is_refused) {
  Job job("[job]\nname = \"../escape\"\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":"), error.message);
  BOOST_TEST(contains(error.message, "job.name: '../escape' is not a plain name"), error.message);
}

BOOST_AUTO_TEST_CASE(bad_unit_in_cluster_names_the_nested_key) {
  Job job(R"(
[cluster]
name = "x"
[[cluster.servers]]
name = "s"
nic = { bandwidth = "25 Gbps" }
devices = [{ count = 2, memory = "8 GiB" }]
)",
          false);
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "cluster.servers[0].nic.bandwidth: '25 Gbps': unknown bandwidth unit 'Gbps'"),
             error.message);
}

BOOST_AUTO_TEST_CASE(an_unlimited_bandwidth_is_a_link_that_takes_no_time) {
  Job job(R"(
[cluster]
name = "x"
network = { bandwidth = "unlimited" }
[[cluster.servers]]
name = "s"
pcie = { switch_bandwidth = "unlimited" }
devices = [{ count = 2, memory = "8 GiB" }]
)",
          false);
  auto spec = load_job(job.path);
  REQUIRE_OK(spec);
  BOOST_TEST(std::isinf(spec->cluster.network.bandwidth));
  BOOST_TEST(std::isinf(spec->cluster.servers.front().pcie_switches.front().bandwidth));
  // Only the word itself: anything else still needs a unit.
  Job misspelt(R"(
[cluster]
name = "x"
network = { bandwidth = "unlimitted" }
[[cluster.servers]]
name = "s"
devices = [{ count = 2, memory = "8 GiB" }]
)",
               false);
  const Error error = expect_error(load_job(misspelt.path));
  BOOST_TEST(contains(error.message, "cluster.network.bandwidth: 'unlimitted'"), error.message);
}

BOOST_AUTO_TEST_CASE(cluster_validation_names_the_entry) {
  Job job(R"(
[cluster]
name = "x"
[[cluster.servers]]
name = "s"
devices = [{ count = 2, memory = "8 GiB", speed = 0 }]
)",
          false);
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, "cluster.servers[0].devices[0].speed: 0 is out of range"), error.message);
}

BOOST_AUTO_TEST_CASE(a_server_without_devices_or_a_cluster_too_large_is_refused_before_it_is_laid_out) {
  // No devices divided a server's layout by zero; 100,000 servers of 4,096 devices each
  // asked for memory until none was left.
  Job empty(R"(
[cluster]
name = "x"
[[cluster.servers]]
name = "s"
devices = []
)",
            false);
  const Error none = expect_error(load_job(empty.path));
  BOOST_TEST(contains(none.message, "cluster.servers[0].devices: lists no devices: give at least one group"),
             none.message);
  Job huge(R"(
[cluster]
name = "x"
[[cluster.servers]]
name = "small"
devices = [{ count = 8, memory = "8 GiB" }]
[[cluster.servers]]
name = "s"
count = 100000
devices = [{ count = 4096, memory = "8 GiB" }]
)",
           false);
  const Error large = expect_error(load_job(huge.path));
  BOOST_TEST(contains(large.message, "cluster.servers[1]: brings the cluster to 409600008 devices; a cluster has at "
                                     "most 1048576"),
             large.message);
}

BOOST_AUTO_TEST_CASE(missing_cluster_file_is_reported_where_it_is_named) {
  Job job("cluster = \"nowhere.toml\"\n", false);
  // "cluster = ..." after [model] would land in [model]; put it at the top instead.
  const std::string path = job.dir.write("top.toml", "cluster = \"nowhere.toml\"\n[model]\nprofile = \"tiny.toml\"\n");
  const Error error = expect_error(load_job(path));
  BOOST_TEST(contains(error.message, path + ":1:11: cluster: "), error.message);
  BOOST_TEST(contains(error.message, "nowhere.toml: file not found"), error.message);
}

BOOST_AUTO_TEST_CASE(missing_profile_names_the_key_and_file) {
  ScratchDir dir;
  const std::string path = dir.write("job.toml", std::string("[model]\nprofile = \"gone.txt\"\n") + inline_cluster);
  const Error error = expect_error(load_job(path));
  BOOST_TEST(contains(error.message, path + ":2:11: model.profile: "), error.message);
  BOOST_TEST(contains(error.message, "gone.txt: file not found"), error.message);
}

BOOST_AUTO_TEST_CASE(missing_required_key_is_named) {
  ScratchDir dir;
  const std::string path = dir.write("job.toml", std::string("[job]\nname = \"x\"\n") + inline_cluster);
  const Error error = expect_error(load_job(path));
  BOOST_TEST(contains(error.message, "model: missing (this key is required)"), error.message);
}

BOOST_AUTO_TEST_CASE(overrides_apply_and_are_checked_like_the_file) {
  Job job("[plan]\nstages = 2\n");
  auto spec = load_job(job.path, {"plan.stages=1", "plan.partitioner=parameters", "train.lr=0.5"});
  BOOST_REQUIRE(spec.ok());
  BOOST_TEST(spec->plan.stages == 1u);
  BOOST_TEST(spec->plan.partitioner == "parameters");
  BOOST_TEST(spec->train.lr == 0.5);
  BOOST_TEST(spec->where("plan.stages") == "--set plan.stages=1: plan.stages: ");

  const Error bad = expect_error(load_job(job.path, {"plan.stages=two"}));
  BOOST_TEST(
      contains(bad.message, "--set plan.stages=two: plan.stages: expected \"auto\" or a positive integer, found 'two'"),
      bad.message);
  const Error typo = expect_error(load_job(job.path, {"plan.stagse=2"}));
  BOOST_TEST(contains(typo.message, "plan.stagse: unknown key, did you mean 'stages'?"), typo.message);
  const Error shape = expect_error(load_job(job.path, {"novalue"}));
  BOOST_TEST(contains(shape.message, "expected key.path=value"), shape.message);
}

BOOST_AUTO_TEST_CASE(an_emulation_dilation_below_one_is_refused) {
  Job job("[emulation]\ndilation = 0.5\n");
  const Error error = expect_error(load_job(job.path));
  BOOST_TEST(contains(error.message, job.path + ":"), error.message);
  BOOST_TEST(contains(error.message, "emulation.dilation"), error.message);
  auto dilated = load_job(job.path, {"emulation.dilation=8"});
  REQUIRE_OK(dilated);
  BOOST_TEST(dilated->emulation.dilation == 8);
}

BOOST_AUTO_TEST_CASE(a_machines_gpus_become_a_cluster_file_jobs_can_name) {
  // Two kinds of GPU: a device group each, in the order they first appear, the second's
  // speed by its multiprocessors against the first's.
  const std::vector<GpuInfo> gpus{{0, "NVIDIA H100 80GB HBM3", 85899345920, 9, 0, 132},
                                  {1, "NVIDIA H100 80GB HBM3", 85899345920, 9, 0, 132},
                                  {2, "NVIDIA A100-SXM4-40GB", 42949672960, 8, 0, 108}};
  const auto toml = gpus_as_cluster_toml(gpus, "box");
  REQUIRE_OK(toml);
  test::ScratchDir dir;
  auto cluster = load_cluster(dir.write("box.toml", *toml));
  REQUIRE_OK(cluster);
  BOOST_REQUIRE_EQUAL(cluster->servers.size(), 1u);
  BOOST_REQUIRE_EQUAL(cluster->devices.size(), 3u);
  BOOST_TEST(cluster->devices[0].name == "box/gpu0");
  BOOST_TEST(cluster->devices[2].name == "box/gpu2");
  BOOST_TEST(cluster->devices[1].kind == "NVIDIA H100 80GB HBM3");
  BOOST_TEST(cluster->devices[2].kind == "NVIDIA A100-SXM4-40GB");
  BOOST_TEST(cluster->devices[0].memory_bytes == 85899345920u);
  BOOST_TEST(cluster->devices[2].memory_bytes == 42949672960u);
  BOOST_TEST(cluster->devices[0].speed == 1.0);
  BOOST_TEST(std::abs(cluster->devices[2].speed - 0.82) < 1e-9);
  // No GPU, no file to describe it.
  const auto none = gpus_as_cluster_toml({}, "box");
  BOOST_REQUIRE(!none);
  BOOST_TEST(contains(none.error().message, "no GPU to describe"), none.error().message);
}
