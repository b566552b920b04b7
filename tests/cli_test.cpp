// The `actorpipe` command: exit codes (0 ok, 1 failed run, 2 bad input), JSON output,
// one clear message per mistake, and no output file left behind by a failed command.
#define BOOST_TEST_MODULE cli
#include <boost/test/unit_test.hpp>

#include <actorpipe/version.hpp>

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <sys/stat.h>
#include <sys/wait.h>

using namespace actorpipe;
using actorpipe::test::run_cli;
using actorpipe::test::ScratchDir;
using test::contains;

namespace {

std::string config(const std::string& name) { return "'" + (test::source_root() / "configs" / name).string() + "'"; }
/// The default job's file, unquoted: for commands run without a shell.
std::string default_job() { return (test::source_root() / "configs" / "fashion-mnist.toml").string(); }

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

BOOST_AUTO_TEST_CASE(version_and_help) {
  const auto version = run_cli("--version");
  BOOST_TEST(version.status == 0);
  BOOST_TEST(contains(version.out, version_string));
  // The LibTorch the training runtime runs on, and whether it has CUDA.
  BOOST_TEST(contains(version.out, std::string("LibTorch ") + libtorch_string), version.out);
  BOOST_TEST((contains(version.out, "(CUDA)") || contains(version.out, "(CPU only)")), version.out);
  for (const char* command : {"plan", "simulate", "plugins", "devices"}) {
    const auto help = run_cli(std::string(command) + " --help");
    BOOST_TEST(help.status == 0, command);
    BOOST_TEST(contains(help.out, "Usage"), command);
  }
  BOOST_TEST(run_cli("").status == 2);
  BOOST_TEST(run_cli("no-such-command").status == 2);
  BOOST_TEST(run_cli("plan").status == 2); // JOB is required
}

BOOST_AUTO_TEST_CASE(plugins_json_lists_the_shipped_plugins) {
  const auto result = run_cli("plugins --json");
  BOOST_REQUIRE_MESSAGE(result.status == 0, result.err);
  const auto json = nlohmann::json::parse(result.out);
  std::set<std::string> seen;
  for (const auto& p : json["plugins"]) {
    BOOST_TEST(!p["version"].get<std::string>().empty());
    BOOST_TEST(std::filesystem::exists(p["file"].get<std::string>()));
    seen.insert(p["kind"].get<std::string>() + "/" + p["name"].get<std::string>());
  }
  BOOST_TEST((seen == std::set<std::string>{"partitioner/autopipe",
                                            "partitioner/dapple",
                                            "partitioner/parameters",
                                            "partitioner/pipedream",
                                            "partitioner/piper",
                                            "partitioner/uniform",
                                            "mapper/hetero",
                                            "mapper/sequential",
                                            "scheduler/1f1b",
                                            "scheduler/afp",
                                            "scheduler/gpipe",
                                            "scheduler/sliced-1f1b",
                                            "scheduler/zb-h1",
                                            "scheduler/zb-h2",
                                            "scheduler/interleaved-1f1b",
                                            "scheduler/zbv",
                                            "sync/ad-psgd",
                                            "sync/allreduce",
                                            "sync/average",
                                            "sync/elastic",
                                            "sync/parameter-server",
                                            "sync/sdpipe"}));
}

BOOST_AUTO_TEST_CASE(plan_prints_a_table_and_json) {
  const auto table = run_cli("plan " + config("vgg16-4dev.toml"));
  BOOST_REQUIRE_MESSAGE(table.status == 0, table.err);
  BOOST_TEST(contains(table.out, "stage  blocks"));
  BOOST_TEST(contains(table.out, "balance"));

  const auto uniform = run_cli("plan " + config("vgg16-4dev.toml") + " --json");
  const auto parameters = run_cli("plan " + config("vgg16-4dev.toml") + " --json --partitioner parameters");
  BOOST_REQUIRE_MESSAGE(uniform.status == 0 && parameters.status == 0, uniform.err + parameters.err);
  const auto u = nlohmann::json::parse(uniform.out);
  const auto p = nlohmann::json::parse(parameters.out);
  BOOST_TEST(u["partitioner"] == "uniform");
  BOOST_TEST(p["partitioner"] == "parameters");
  BOOST_TEST(u["stages"] != p["stages"]);
  BOOST_TEST(p["parameter_balance"].get<double>() < u["parameter_balance"].get<double>());
}

BOOST_AUTO_TEST_CASE(flags_override_the_job) {
  const auto result = run_cli("plan " + config("vgg16-4dev.toml") +
                              " --json --stages 2 --pipelines 2 --micro-batches 4 --set train.batch_size=64");
  BOOST_REQUIRE_MESSAGE(result.status == 0, result.err);
  const auto json = nlohmann::json::parse(result.out);
  BOOST_TEST(json["stages"].size() == 2u);
  BOOST_TEST(json["pipelines"] == 2);
  BOOST_TEST(json["micro_batches"] == 4);
  BOOST_TEST(json["batch_size"] == 64);
  BOOST_TEST(json["stages"][0]["devices"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(profile_and_cluster_flags_take_paths_from_the_current_folder) {
  const std::string profile = "'" + (test::source_root() / "configs/profiles/pipedream/alexnet.txt").string() + "'";
  const std::string cluster = "'" + (test::source_root() / "configs/clusters/hetero-2x8.toml").string() + "'";
  const auto result =
      run_cli("plan " + config("vgg16-4dev.toml") + " --json --profile " + profile + " --cluster " + cluster);
  BOOST_REQUIRE_MESSAGE(result.status == 0, result.err);
  const auto json = nlohmann::json::parse(result.out);
  BOOST_TEST(json["model"] == "alexnet");
  BOOST_TEST(json["cluster"] == "hetero-2x8");
}

BOOST_AUTO_TEST_CASE(bad_input_exits_2_with_one_message_and_writes_nothing) {
  ScratchDir dir;
  const std::string output = (dir.path() / "plan.json").string();
  struct Case {
    std::string job;
    std::string extra;
    std::string message;
  };
  const std::string bad_syntax = dir.write("syntax.toml", "[model\n");
  const std::string bad_key = dir.write("key.toml", "cluster = \"x\"\n[model]\nprofil = \"p\"\n");
  const std::vector<Case> cases = {
      {bad_syntax, "", bad_syntax + ":1:"},
      {bad_key, "", bad_key + ":3:1: model.profil: unknown key, did you mean 'profile'?"},
      {config("vgg16-4dev.toml"), "--set model.profile_batch_size=0", "model.profile_batch_size: 0 is out of range"},
      {config("vgg16-4dev.toml"), "--set plan.stages=-1", "--set plan.stages=-1: plan.stages: -1 is out of range"},
      {config("vgg16-4dev.toml"), "--set plan.stagez=4",
       "--set plan.stagez=4: plan.stagez: unknown key, did you mean 'stages'?"},
      {config("vgg16-4dev.toml"), "--set plann.stages=4", "--set plann.stages=4: plann: unknown key, did you mean"},
      {config("vgg16-4dev.toml"), "--partitioner nope",
       "--partitioner nope: plan.partitioner: no partitioner named 'nope'"},
      {config("vgg16-4dev.toml"), "--stages many", "--stages many: plan.stages:"},
      {config("vgg16-4dev.toml"), "--profile missing.txt", "missing.txt: file not found"},
      {config("vgg16-4dev.toml"), "--plugin-path '" + (test::broken_plugins() / "wrong_abi.so").string() + "'",
       "wrong_abi.so: plugin ABI version"},
      {(dir.path() / "absent.toml").string(), "", "absent.toml: file not found"},
      {config("vgg16-4dev.toml"),
       "--mapper throws --plugin-path '" + (test::broken_plugins() / "throwing.so").string() + "'",
       "throwing.so): map threw: mapper exploded"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.message) {
      const auto result = run_cli("plan " + c.job + " " + c.extra + " -o '" + output + "'");
      BOOST_TEST(result.status == 2);
      BOOST_TEST(contains(result.err, c.message), result.err);
      BOOST_TEST(lines(result.err) == 1u, result.err);
      BOOST_TEST(result.out.empty());
      BOOST_TEST(!std::filesystem::exists(output));
      BOOST_TEST(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 2); // only the inputs
    }
  }
}

BOOST_AUTO_TEST_CASE(an_output_path_that_is_not_a_regular_file_is_bad_input_and_left_as_it_was) {
  ScratchDir dir;
  const auto at = [&](const char* name) { return (dir.path() / name).string(); };
  BOOST_REQUIRE(::mkfifo(at("pipe").c_str(), 0644) == 0); // as a device node or a terminal would be
  std::filesystem::create_symlink(at("pipe"), at("to-pipe"));
  std::filesystem::create_directories(at("folder"));
  const std::string file = dir.write("file", "a file");
  const std::string job = config("vgg16-4dev.toml");
  const std::pair<std::string, std::string> cases[] = {
      {"plan " + job + " -o '" + at("pipe") + "'", "pipe: is a pipe, not a regular file"},
      {"plan " + job + " -o '" + at("to-pipe") + "'", "to-pipe: is a symbolic link to "},
      {"simulate " + job + " --iterations 2 --trace '" + at("pipe") + "'", "pipe: is a pipe"},
      {"plan " + job + " -o '" + at("folder") + "'", "folder: is a folder, not a regular file"},
      {"plan " + job + " -o '" + at("missing/plan.json") + "'", "cannot create the file: No such file or directory"},
      {"plan " + job + " -o '" + file + "/plan.json'", "cannot create the file: Not a directory"},
      {"run " + config("fashion-mnist.toml") + " --steps 1 -o '" + file + "'", "file: is not a folder"},
      {"run " + config("fashion-mnist.toml") + " --steps 1 -o '" + file + "/run'", "file: is not a folder"},
  };
  for (const auto& [args, message] : cases) {
    BOOST_TEST_CONTEXT(args) {
      const auto result = run_cli(args);
      BOOST_TEST(result.status == 2);
      BOOST_TEST(contains(result.err, message), result.err);
    }
  }
  struct stat st {};
  BOOST_TEST((::lstat(at("pipe").c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
  BOOST_TEST(std::filesystem::is_symlink(at("to-pipe")));
  BOOST_TEST(std::filesystem::is_empty(at("folder")));
  BOOST_TEST(std::filesystem::file_size(file) == 6u); // "a file", untouched
}

BOOST_AUTO_TEST_CASE(commands_and_counts_out_of_range_are_named) {
  const auto unknown = run_cli("simulat " + config("vgg16-4dev.toml"));
  BOOST_TEST(unknown.status == 2);
  BOOST_TEST(contains(unknown.err, "unknown command 'simulat' (commands: "), unknown.err);
  BOOST_TEST(contains(unknown.err, "simulate"), unknown.err);

  ScratchDir dir;
  const auto steps = run_cli("run " + config("fashion-mnist.toml") + " --steps 99999999999999999999999 -o '" +
                             (dir.path() / "run").string() + "'");
  BOOST_TEST(steps.status == 2);
  BOOST_TEST(contains(steps.err, "--steps"), steps.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run"));

  const std::string corpus = dir.write("corpus.txt", std::string(400, 'a'));
  const std::string gpt = dir.write(
      "gpt.toml", "cluster = \"" + (test::source_root() / "configs/clusters/cpu-4.toml").string() +
                      "\"\n[model]\nzoo = \"gpt\"\nwidth = 30\nheads = 4\ncontext = 16\n[data]\ndataset = \"text\"\n"
                      "path = \"corpus.txt\"\n");
  const auto heads = run_cli("profile " + gpt);
  BOOST_TEST(heads.status == 2);
  BOOST_TEST(contains(heads.err, gpt + ":4:9: model.width: 30 is not a multiple of model.heads (4)"), heads.err);

  const auto load = run_cli("profile " + config("fashion-mnist.toml") + " --load 100000");
  BOOST_TEST(load.status == 2);
  BOOST_TEST(contains(load.err, "profile load 100000: more copies of the model than the "), load.err);
  const auto batch = run_cli("profile " + config("fashion-mnist.toml") + " --batch-size 1000000");
  BOOST_TEST(batch.status == 2);
  BOOST_TEST(contains(batch.err, "profile batch size 1000000: more than the 60000 training samples"), batch.err);
  const auto huge = run_cli("profile " + config("fashion-mnist.toml") + " --batch-size 100000000");
  BOOST_TEST(huge.status == 2);
  BOOST_TEST(contains(huge.err, "profile batch size 100000000: at most 16777216"), huge.err);
}

namespace {

/// A small MLP on synthetic data, planned uniformly onto one server `server` of `count`
/// devices of `kind`, each with `memory`, as `stages` × `pipelines`.
std::string one_server_mlp_job(const std::string& server, const std::string& kind, int count, const std::string& memory,
                               int stages, int pipelines) {
  return "[cluster]\nname = \"" + server + "\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n" +
         "[[cluster.servers]]\nname = \"" + server + "\"\n" + "pcie = { devices_per_switch = " + std::to_string(count) +
         ", switch_bandwidth = \"16 GB/s\", inter_bridge_bandwidth = \"16 GB/s\" }\n" +
         "nic = { count = 1, bandwidth = \"10 GB/s\" }\n" + "devices = [{ kind = \"" + kind +
         "\", count = " + std::to_string(count) + ", speed = 1.0, memory = \"" + memory + "\" }]\n" +
         "[model]\nzoo = \"mlp\"\n[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [8]\n" +
         "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nstages = " + std::to_string(stages) +
         "\npipelines = " + std::to_string(pipelines) + "\n";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_plan_on_gpus_this_machine_lacks_is_refused_naming_the_first) {
  // Eight GPUs of one server, a stage on each: gpu0 is missing where there is no GPU,
  // gpu1 on a machine with one, and so on; none is there on every machine tried.
  ScratchDir dir;
  const std::string job = dir.write("gpus.toml", one_server_mlp_job("big", "H100", 8, "80 GiB", 2, 4));
  const auto run = run_cli("run " + job + " --steps 1 -o '" + (dir.path() / "run").string() + "'");
  BOOST_TEST(run.status == 2, run.err);
  BOOST_TEST(contains(run.err, "on big/gpu"), run.err);
  BOOST_TEST(contains(run.err, "(kind \"H100\", so cuda:"), run.err);
  // Why: too few GPUs here, or none ("no CUDA device found" and LibTorch's reason).
  BOOST_TEST((contains(run.err, "but this machine has") || contains(run.err, "but no CUDA device found")), run.err);
  BOOST_TEST(contains(run.err, "give such devices kind \"cpu\" or \"emulated\""), run.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run"));
}

BOOST_AUTO_TEST_CASE(a_run_on_emulated_devices_says_its_rate_is_in_modelled_time) {
  ScratchDir dir;
  const std::string job = dir.write("emulated.toml", one_server_mlp_job("slow", "emulated", 2, "8 GiB", 2, 1));
  const auto run = run_cli("run " + job + " --steps 2 -o '" + (dir.path() / "run").string() + "'");
  BOOST_TEST(run.status == 0, run.err);
  BOOST_TEST(contains(run.out, "samples/s in modelled time): final loss"), run.out);
  BOOST_TEST(contains(run.err, "samples/s in modelled time  ETA"), run.err);
}

BOOST_AUTO_TEST_CASE(clipping_under_a_policy_whose_pipelines_step_on_their_own_is_refused_before_anything_is_written) {
  ScratchDir dir;
  const std::string job = dir.write("clip.toml", one_server_mlp_job("cpus", "cpu", 2, "8 GiB", 1, 2) +
                                                     "sync = \"sdpipe\"\n[train]\nclip_norm = 1.0\n");
  const auto run = run_cli("run " + job + " --steps 2 -o '" + (dir.path() / "run").string() + "'");
  BOOST_TEST(run.status == 2, run.err);
  BOOST_TEST(contains(run.err, job + ":"), run.err);
  BOOST_TEST(contains(run.err, "train.clip_norm: clipping by the model's gradient norm needs the pipelines' gradients "
                               "reduced before they step; under this sync policy each pipeline steps on its own"),
             run.err);
  BOOST_TEST(contains(run.err, "(plan.sync = \"sdpipe\")"), run.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run"));
  // One pipeline has nobody to disagree with: it clips under any policy.
  const auto alone =
      run_cli("run " + job + " --steps 2 --set plan.pipelines=1 -o '" + (dir.path() / "alone").string() + "'");
  BOOST_TEST(alone.status == 0, alone.err);
}

BOOST_AUTO_TEST_CASE(bf16_and_fp16_train_on_the_cpu_and_fp16_keeps_to_one_stage) {
  // Autocast on the CPU, and fp16's loss scale, whose overflow check and unscaling run
  // on any device: a short run's losses stay finite and fall.
  ScratchDir dir;
  const std::string job = dir.write(
      "mlp.toml", test::cpu_cluster_toml(4, "4 GiB") +
                      "[model]\nzoo = \"mlp\"\n[data]\ndataset = \"synthetic\"\nsamples = 512\nshape = [16]\n"
                      "[train]\nbatch_size = 64\nlr = 0.05\nmomentum = 0.9\n"
                      "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nstages = 1\npipelines = 2\n");
  for (const char* precision : {"bf16", "fp16"}) {
    const std::string out = (dir.path() / precision).string();
    const auto run = run_cli("run " + job + " --steps 40 --json -o '" + out + "' --set train.precision=" + precision);
    BOOST_REQUIRE_MESSAGE(run.status == 0, precision << ": " << run.err);
    const auto summary = nlohmann::json::parse(run.out);
    const double final_loss = summary["final_loss"].get<double>();
    std::ifstream metrics(out + "/metrics.jsonl");
    std::string first_line;
    std::getline(metrics, first_line);
    const double first_loss = nlohmann::json::parse(first_line)["loss"].get<double>();
    BOOST_TEST(std::isfinite(final_loss), precision);
    BOOST_TEST(final_loss < first_loss, precision << ": " << first_loss << " to " << final_loss);
    // fp16's lines count the steps its loss scale skipped (its first scale, 2^16, may
    // overflow), bf16's have no such count.
    BOOST_TEST(nlohmann::json::parse(first_line).contains("skipped_steps") == (std::string(precision) == "fp16"));
  }
  const auto two = run_cli("run " + job + " --steps 1 -o '" + (dir.path() / "two").string() +
                           "' --set train.precision=fp16 --set plan.stages=2");
  BOOST_TEST(two.status == 2, two.err);
  BOOST_TEST(contains(two.err, "train.precision: \"fp16\" runs one stage per pipeline for now"), two.err);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "two"));
}

BOOST_AUTO_TEST_CASE(output_file_holds_the_json_plan) {
  ScratchDir dir;
  const std::string output = (dir.path() / "plan.json").string();
  const auto result = run_cli("plan " + config("vgg16-4dev.toml") + " --json -o '" + output + "'");
  BOOST_REQUIRE_MESSAGE(result.status == 0, result.err);
  std::ifstream in(output);
  const auto written = nlohmann::json::parse(in);
  BOOST_TEST(written == nlohmann::json::parse(result.out));
}

BOOST_AUTO_TEST_CASE(a_hangup_quit_or_kill_stops_a_run_at_a_checkpoint_as_ctrl_c_does) {
  // SIGHUP (a closed terminal) and SIGQUIT ended a run at once, without the checkpoint
  // Ctrl-C stops it at; each is now taken as Ctrl-C, and the exit status says which came.
  for (const int signal : {SIGHUP, SIGQUIT, SIGTERM, SIGINT})
    BOOST_TEST_CONTEXT("signal " << signal) {
      ScratchDir dir;
      const std::string out = (dir.path() / "run").string();
      test::RunningCli run({"run", default_job(), "--epochs", "2", "-o", out});
      BOOST_REQUIRE_MESSAGE(run.wait_for_line("epoch 1 step "), run.err);
      run.signal(signal);
      BOOST_TEST(run.wait() == 128 + signal, run.err);
      BOOST_TEST(contains(run.err, "actorpipe: interrupted; stopped after step "), run.err);
      BOOST_TEST(std::filesystem::exists(dir.path() / "run" / "checkpoint.pt"));
    }
}

BOOST_AUTO_TEST_CASE(seconds_that_are_not_a_finite_number_within_bounds_are_refused) {
  // NaN passed every range check (no comparison with it is true), and 1e300 seconds
  // overflowed the clock: a script stopped at once, a run had no stall limit.
  for (const std::string& flags :
       {std::string("run ") + config("fashion-mnist.toml") + " --stall-timeout nan",
        std::string("run ") + config("fashion-mnist.toml") + " --stall-timeout 1e300",
        std::string("launch --nprocs 2 ") + config("fashion-mnist.toml") + " --heartbeat-timeout nan",
        std::string("script x.lua --timeout nan"), std::string("script x.lua --timeout 1e300"),
        std::string("script x.lua --timeout inf")})
    BOOST_TEST_CONTEXT(flags) {
      const auto r = run_cli(flags);
      BOOST_TEST(r.status == 2);
      BOOST_TEST(contains(r.err, "must be seconds from "), r.err);
    }
}

BOOST_AUTO_TEST_CASE(ctrl_c_while_tuning_exits_as_the_shell_reports_it) {
  // Tuning stops between its settings; it exited 1, as for a failure.
  ScratchDir dir;
  test::RunningCli run({"run", default_job(), "--set", "plan.tune=\"profile\"", "--set", "plan.tune_candidates=4",
                        "--set", "plan.tune_steps=30", "--set", "plan.pipelines=\"auto\"", "--set",
                        "plan.micro_batches=\"auto\"", "--steps", "5", "-o", (dir.path() / "run").string()});
  BOOST_REQUIRE_MESSAGE(run.wait_for_line("actorpipe: tuning: 1/"), run.err);
  run.signal(SIGINT);
  BOOST_TEST(run.wait() == 130, run.err);
  BOOST_TEST(contains(run.err, "tuning was interrupted"), run.err);
}

BOOST_AUTO_TEST_CASE(profile_measures_where_the_job_computes_or_where_asked) {
  // A cluster of H100s: measured on the job's first GPU where this machine has one, on
  // the CPU where it has none; in the job's precision, which the profile records.
  ScratchDir dir;
  const std::string job = dir.write(
      "gpus.toml",
      "[cluster]\nname = \"two\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n"
      "[[cluster.servers]]\nname = \"big\"\n"
      "pcie = { devices_per_switch = 2, switch_bandwidth = \"16 GB/s\", inter_bridge_bandwidth = \"16 GB/s\" }\n"
      "nic = { count = 1, bandwidth = \"10 GB/s\" }\n"
      "devices = [{ kind = \"H100\", count = 2, speed = 1.0, memory = \"80 GiB\" }]\n"
      "[model]\nzoo = \"mlp\"\n[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [8]\n"
      "[train]\nbatch_size = 32\n");
  const bool gpu = !nlohmann::json::parse(run_cli("devices --json").out)["gpus"].empty();
  const auto measured = run_cli("profile " + job + " --repeats 1 --set train.precision=bf16");
  BOOST_REQUIRE_MESSAGE(measured.status == 0, measured.err);
  BOOST_TEST(contains(measured.out, gpu ? "reference_device = 'cuda:0" : "reference_device = 'cpu, "), measured.out);
  BOOST_TEST(contains(measured.out, "precision = 'bf16'"), measured.out);
  BOOST_TEST(contains(measured.out, "workspace_bytes_per_sample = "), measured.out);
  const auto cpu = run_cli("profile " + job + " --repeats 1 --device cpu");
  BOOST_REQUIRE_MESSAGE(cpu.status == 0, cpu.err);
  BOOST_TEST(contains(cpu.out, "reference_device = 'cpu, "), cpu.out);
  // A GPU this machine lacks is named; a device that is none is refused by the parser.
  const auto missing = run_cli("profile " + job + " --device cuda:97");
  BOOST_TEST(missing.status == 2, missing.err);
  BOOST_TEST(contains(missing.err, "profile device: cuda:97: "), missing.err);
  const auto bad = run_cli("profile " + job + " --device gpu0");
  BOOST_TEST(bad.status != 0);
  BOOST_TEST(contains(bad.err, "--device"), bad.err);
}

BOOST_AUTO_TEST_CASE(devices_reports_instead_of_crashing_without_a_gpu) {
  const auto result = run_cli("devices --json");
  BOOST_REQUIRE_MESSAGE(result.status == 0, result.err);
  const auto json = nlohmann::json::parse(result.out);
  BOOST_TEST(json["cpu"]["threads"].get<int>() >= 1);
  if (json["gpus"].empty()) BOOST_TEST(!json["cuda_error"].get<std::string>().empty());
  // Without a GPU there is no cluster to write, and nothing is written.
  if (json["gpus"].empty()) {
    ScratchDir dir;
    const auto cluster = run_cli("devices --cluster '" + (dir.path() / "here.toml").string() + "'");
    BOOST_TEST(cluster.status == 1);
    BOOST_TEST(contains(cluster.err, "nothing written"), cluster.err);
    BOOST_TEST(!std::filesystem::exists(dir.path() / "here.toml"));
  }
  // Asking for the NCCL check where there is no GPU to run it on reports it skipped,
  // and is no failure.
  if (json["gpus"].empty()) {
    const auto nccl = run_cli("devices --nccl");
    BOOST_TEST(nccl.status == 0, nccl.err);
    BOOST_TEST(contains(nccl.out, "cuda"));
    BOOST_TEST(contains(nccl.out, "nccl   skipped: no GPU to check it on"), nccl.out);
  }
}

BOOST_AUTO_TEST_CASE(resuming_from_a_folder_without_a_checkpoint_is_refused_before_anything_runs) {
  // Before the profile is measured and the job planned: exit 2, naming the checkpoint
  // looked for, and the folder left as it was.
  ScratchDir dir;
  const std::string empty = (dir.path() / "empty").string();
  std::filesystem::create_directories(empty);
  const auto result = run_cli("run " + config("fashion-mnist.toml") + " --steps 1 --resume '" + empty + "'");
  BOOST_TEST(result.status == 2);
  BOOST_TEST(contains(result.err, empty + "/checkpoint.pt not found"), result.err);
  BOOST_TEST(!contains(result.err, "measuring pass"), result.err);
  BOOST_TEST(!contains(result.err, "planning"), result.err);
  BOOST_TEST(std::filesystem::is_empty(empty));
}

BOOST_AUTO_TEST_CASE(a_second_run_of_a_job_leaves_the_first_runs_folder_alone) {
  // output.dir (runs/{job}) that an earlier run wrote into is left to it: the next run
  // writes to runs/{job}-2, the one after to -3, and each says so.
  ScratchDir dir;
  const std::string runs = (dir.path() / "runs").string();
  const std::string job = dir.write(
      "twice.toml", test::cpu_cluster_toml(2, "4 GiB") +
                        "[job]\nname = \"twice\"\n[model]\nzoo = \"mlp\"\n"
                        "[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [8]\n[train]\nbatch_size = 32\n"
                        "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nstages = 1\npipelines = 1\n"
                        "[output]\ndir = \"" +
                        runs + "/{job}\"\n");
  auto metrics_of = [](const std::string& folder) {
    std::ifstream in(folder + "/metrics.jsonl");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const auto first = run_cli("run " + job + " --steps 1");
  BOOST_REQUIRE_MESSAGE(first.status == 0, first.err);
  const std::string first_metrics = metrics_of(runs + "/twice");
  BOOST_REQUIRE(!first_metrics.empty());
  for (const char* suffix : {"-2", "-3"}) {
    const auto again = run_cli("run " + job + " --steps 2");
    BOOST_REQUIRE_MESSAGE(again.status == 0, again.err);
    BOOST_TEST(
        contains(again.err, runs + "/twice holds an earlier run; this one writes to " + runs + "/twice" + suffix),
        again.err);
    BOOST_TEST(std::filesystem::exists(runs + "/twice" + suffix + "/checkpoint.pt"), suffix);
  }
  BOOST_TEST(metrics_of(runs + "/twice") == first_metrics);
}

BOOST_AUTO_TEST_CASE(plan_json_has_predictions_and_compare_prints_rows) {
  const auto plan = run_cli("plan " + config("gpt2-xl-hetero-2x8.toml") + " --json");
  BOOST_REQUIRE_MESSAGE(plan.status == 0, plan.err);
  const auto json = nlohmann::json::parse(plan.out);
  for (const char* key : {"iteration_time_ms", "samples_per_s", "balance", "search_ms", "pipelines", "micro_batches",
                          "schedule", "stages"})
    BOOST_TEST(json.contains(key), key);
  for (const char* key : {"index", "first_block", "last_block", "device", "compute_ms", "memory_bytes", "bubble"})
    BOOST_TEST(json["stages"][0].contains(key), key);
  BOOST_TEST(json["samples_per_s"].get<double>() > 0);

  const auto compare = run_cli("plan " + config("gpt2-xl-hetero-2x8.toml") +
                               " --compare autopipe+hetero,dapple+sequential,piper,pipedream,uniform");
  BOOST_REQUIRE_MESSAGE(compare.status == 0, compare.err);
  for (const char* name : {"autopipe", "dapple", "piper", "pipedream", "uniform", "samples/s"})
    BOOST_TEST(contains(compare.out, name), name);

  const auto unknown = run_cli("plan " + config("vgg16-4dev.toml") + " --compare autopipe,nosuch");
  BOOST_TEST(unknown.status == 2);
  BOOST_TEST(contains(unknown.err, "--compare nosuch: plan.partitioner: no partitioner named 'nosuch'"), unknown.err);
}

BOOST_AUTO_TEST_CASE(simulate_reports_and_writes_a_trace) {
  ScratchDir dir;
  const std::string trace = (dir.path() / "trace.json").string();
  const auto run = run_cli("simulate " + config("vgg16-4dev.toml") +
                           " --iterations 3 --stragglers 'delay:p=0.5,ms=5' --trace '" + trace + "' --json");
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  const auto json = nlohmann::json::parse(run.out);
  BOOST_TEST(json["iterations"] == 3);
  BOOST_TEST(json["iteration_ms"].size() == 3u);
  BOOST_TEST(json["stages"].size() == 4u);
  BOOST_TEST(json["links"].size() > 0u);
  std::ifstream file(trace);
  const auto events = nlohmann::json::parse(file)["traceEvents"];
  BOOST_TEST(events.size() > 3u * 4 * 16);

  const auto table = run_cli("simulate " + config("vgg16-4dev.toml"));
  BOOST_TEST(table.status == 0);
  for (const char* part : {"iteration", "bubble", "busiest links", "fullest devices"})
    BOOST_TEST(contains(table.out, part), part);

  const auto bad = run_cli("simulate " + config("vgg16-4dev.toml") + " --stragglers 'slow:device=node/gpu7,factor=2'");
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(lines(bad.err) == 1u);
  BOOST_TEST(contains(bad.err, "--stragglers: stragglers: 'slow:device=node/gpu7,factor=2': no device 'node/gpu7'"),
             bad.err);
}

BOOST_AUTO_TEST_CASE(run_says_so_when_actorpipe_train_is_missing) {
  // `actorpipe` hands training to actorpipe-train beside it or under LIBEXECDIR; a copy
  // of it alone in a folder finds neither.
  ScratchDir scratch;
  const std::filesystem::path lonely = scratch.path() / "bin" / "actorpipe";
  std::filesystem::create_directories(lonely.parent_path());
  std::filesystem::copy_file(std::getenv("ACTORPIPE_CLI"), lonely);
  const std::filesystem::path err = scratch.path() / "err";
  const std::string command = "LD_LIBRARY_PATH='" + (test::build_root() / "runtime/src").string() + "' '" +
                              lonely.string() + "' run " + config("fashion-mnist.toml") + " 2>'" + err.string() + "'";
  const int raw = std::system(command.c_str());
  BOOST_TEST(WIFEXITED(raw));
  BOOST_TEST(WEXITSTATUS(raw) == 1);
  std::ifstream in(err);
  const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(contains(message, "actorpipe: cannot start "), message);
  BOOST_TEST(contains(message, "actorpipe-train for this command"), message);
}

BOOST_AUTO_TEST_CASE(a_run_leaves_its_metrics_as_csv_as_counter_tracks_and_as_events_tensorboard_reads) {
  ScratchDir dir;
  const std::string out = (dir.path() / "run").string();
  const std::string job = dir.write(
      "tracked.toml", test::cpu_cluster_toml(2, "4 GiB") +
                          "[job]\nname = \"tracked\"\n[model]\nzoo = \"mlp\"\n"
                          "[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [8]\n"
                          "[train]\nbatch_size = 32\neval_every = 4\n"
                          "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nstages = 2\npipelines = 1\n"
                          "[output]\ntensorboard = true\n");
  // 6 steps, then resumed to 10 in the same folder: each file goes on from what the
  // checkpoint kept, and no step is there twice.
  const auto first = run_cli("run " + job + " --steps 6 -o " + out);
  BOOST_REQUIRE_MESSAGE(first.status == 0, first.err);
  const auto resumed = run_cli("run " + job + " --steps 10 -o " + out + " --resume " + out);
  BOOST_REQUIRE_MESSAGE(resumed.status == 0, resumed.err);
  std::vector<nlohmann::json> lines;
  {
    std::ifstream in(out + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);)
      lines.push_back(nlohmann::json::parse(line));
  }
  std::vector<nlohmann::json> steps;
  for (const auto& line : lines)
    if (line["kind"] == "step") steps.push_back(line);
  BOOST_REQUIRE_EQUAL(steps.size(), 10u);
  BOOST_REQUIRE_EQUAL(lines.size(), 14u); // evaluations after 4, 6 (the first run's end), 8 and 10
  // metrics.csv: a header and a row a line, the same values.
  std::ifstream csv(out + "/metrics.csv");
  std::string header;
  std::getline(csv, header);
  BOOST_TEST(header == "kind,step,epoch,loss,rss_bytes,samples_per_s,step_ms,test_accuracy,test_loss");
  std::vector<std::string> rows;
  for (std::string row; std::getline(csv, row);)
    rows.push_back(row);
  BOOST_REQUIRE_EQUAL(rows.size(), lines.size());
  BOOST_TEST(rows[0].starts_with("step,1,1," + lines[0]["loss"].dump() + ","), rows[0]);
  BOOST_TEST(rows[4].starts_with("evaluation,4,1,,,,,"), rows[4]);
  // trace.json: counter tracks of the resumed run's steps, the loss one value a step.
  std::ifstream trace_file(out + "/trace.json");
  const auto trace = nlohmann::json::parse(trace_file);
  std::vector<double> traced;
  std::set<std::string> counters;
  for (const auto& event : trace["traceEvents"])
    if (event.value("ph", "") == "C") {
      counters.insert(event["name"].get<std::string>());
      if (event["name"] == "loss") traced.push_back(event["args"]["loss"].get<double>());
    }
  BOOST_TEST(counters == (std::set<std::string>{"loss", "samples/s", "memory (bytes)"}));
  BOOST_REQUIRE_EQUAL(traced.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(traced[i] == steps[6 + i]["loss"].get<double>());
  // The event file, as TensorBoard itself reads it.
  const char* python = std::getenv("ACTORPIPE_PYTHON");
  BOOST_REQUIRE_MESSAGE(python && *python, "ACTORPIPE_PYTHON names no python3 (with tensorboard)");
  const auto read = test::run_command(std::string(python) + " " +
                                      (test::source_root() / "tests/tensorboard_check.py").string() + " " + out);
  BOOST_REQUIRE_MESSAGE(read.status == 0, read.err);
  const auto scalars = nlohmann::json::parse(read.out);
  BOOST_REQUIRE(scalars.contains("train/loss"));
  BOOST_REQUIRE_EQUAL(scalars["train/loss"].size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    const auto& point = scalars["train/loss"][i];
    BOOST_TEST(point[0] == steps[i]["step"]);
    BOOST_TEST(std::abs(point[1].get<double>() - steps[i]["loss"].get<double>()) < 1e-6); // kept as float
  }
  BOOST_REQUIRE_EQUAL(scalars["test/accuracy"].size(), 4u);
  BOOST_TEST(scalars["test/accuracy"][2][0] == 8);
  BOOST_TEST(scalars["memory/rss_bytes"].size() == 10u);
  BOOST_TEST(scalars["train/samples_per_s"].size() == 10u);
}
