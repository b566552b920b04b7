/// Runtime benchmark, three tables measured in one run on this machine's CPU:
///   throughput  the default job's CNN (configs/fashion-mnist.toml, batch 128): actorpipe
///               with 2 stages × 1 and × 2 pipelines against single-process LibTorch
///               with 1 and 2 threads and PyTorch eager (Debian's python3-torch) with 1
///               and 2 threads, on the same model and batch;
///   per hop     a tiny MLP, one micro-batch of 4 samples, through 8 stages and through
///               1: the extra step time over the 14 extra hops (7 forward, 7 backward);
///   prediction  the measured iteration time of the default job per schedule against
///               the simulator's prediction from the profile measured here.
/// Steps are timed after warm-up steps; a run's rate is samples over the summed step
/// times of its timed steps.
///   build/bench/runtime_bench [SOURCE_ROOT] [--steps N]

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/training.hpp>

#include "text.hpp"
#include "text_table.hpp"
#include "train/single_process.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

using namespace actorpipe;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t warmup_steps = 10;

struct Rate {
  double samples_per_s = 0;
  double step_ms = 0; ///< median of the timed steps
};

Rate rate_of(std::vector<double> step_ms, std::uint32_t batch) {
  double total = 0;
  for (double ms : step_ms) total += ms;
  std::sort(step_ms.begin(), step_ms.end());
  return {static_cast<double>(batch) * static_cast<double>(step_ms.size()) / (total / 1000.0), step_ms[step_ms.size() / 2]};
}

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "runtime_bench: " << what << "\n";
  std::exit(2);
}

template <class T>
T need(Result<T> result) {
  if (!result) fail(result.error().message);
  return std::move(*result);
}

/// A job with its profile measured on this machine and its plan.
struct Prepared {
  JobSpec job;
  Plan plan;
};

Prepared prepare(const std::string& file, const std::vector<std::string>& overrides, const PluginRegistry& plugins,
                 const std::optional<ModelProfile>& profile = std::nullopt) {
  JobSpec job = need(load_job(file, overrides));
  job.profile = profile ? *profile : need(measure_profile(job, {}));
  Plan plan = need(make_plan(job, plugins));
  return {std::move(job), std::move(plan)};
}

/// Trains `p` for warm-up + `steps` steps; the step times of the timed ones.
std::vector<double> run_steps(const Prepared& p, std::uint64_t steps, const fs::path& scratch) {
  std::vector<double> times;
  RunOptions options;
  options.steps = warmup_steps + steps;
  options.output_dir = (scratch / "run").string();
  options.on_step = [&](const StepMetrics& m) {
    if (m.step > warmup_steps) times.push_back(m.step_ms);
  };
  need(run_training(p.job, p.plan, options));
  fs::remove_all(options.output_dir);
  return times;
}

Rate libtorch(const JobSpec& job, int threads, std::uint64_t steps) {
  torch::set_num_threads(threads);
  auto training = need(train::SingleProcessTraining::open(job));
  std::vector<double> times;
  for (std::uint64_t k = 0; k < warmup_steps + steps; ++k) {
    const auto start = std::chrono::steady_clock::now();
    training->step();
    if (k >= warmup_steps)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return rate_of(times, job.train.batch_size);
}

/// PyTorch eager through bench/pytorch_eager.py, with $PYTHON, else the first of
/// python3 on the PATH and Debian's own python3 that imports torch; nullopt when none.
std::optional<Rate> pytorch(const std::string& root, int threads, std::uint32_t batch, std::uint64_t steps) {
  std::string python;
  const char* chosen = std::getenv("PYTHON");
  for (const std::string candidate : {chosen ? chosen : "", "python3", "/usr/bin/python3"})
    if (!candidate.empty() && std::system((candidate + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
      python = candidate;
      break;
    }
  if (python.empty()) return std::nullopt;
  const std::string command = python + " '" + root + "/bench/pytorch_eager.py' --threads " + std::to_string(threads) +
                              " --batch " + std::to_string(batch) + " --steps " + std::to_string(steps) +
                              " --warmup " + std::to_string(warmup_steps) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  if (pclose(pipe) != 0) return std::nullopt;
  // {"samples_per_s": X, "step_ms": Y}
  Rate r;
  if (std::sscanf(out.c_str(), "{\"samples_per_s\": %lf, \"step_ms\": %lf}", &r.samples_per_s, &r.step_ms) != 2)
    return std::nullopt;
  return r;
}

/// A job for the tiny MLP on `stages` CPU devices: one micro-batch of 4 samples.
std::string hop_job(std::size_t stages) {
  return "[cluster]\nname = \"cpu-8\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n"
         "[[cluster.servers]]\nname = \"local\"\n"
         "pcie = { devices_per_switch = 8, switch_bandwidth = \"10 GB/s\", inter_bridge_bandwidth = \"10 GB/s\" }\n"
         "nic = { count = 1, bandwidth = \"10 GB/s\" }\n"
         "devices = [{ kind = \"cpu\", count = 8, speed = 1.0, memory = \"1 GiB\" }]\n"
         "[job]\nname = \"hops\"\n"
         "[model]\nzoo = \"mlp\"\nlayers = 7\nwidth = 4\n"
         "[data]\ndataset = \"synthetic\"\nsamples = 4096\nshape = [4]\nclasses = 2\n"
         "[train]\nbatch_size = 4\noptimizer = \"sgd\"\nlr = 0.01\n"
         "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"gpipe\"\n"
         "stages = " + std::to_string(stages) + "\npipelines = 1\nmicro_batches = 1\n";
}

std::string ratio(double value, double base) { return text::format_fixed(value / base, 2) + "×"; }

} // namespace

int main(int argc, char** argv) {
  std::string root = ".";
  std::uint64_t steps = 60;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::stoull(argv[++i]);
    else root = a;
  }
  const auto plugins = need(PluginRegistry::discover(PluginRegistry::default_folders()));
  const fs::path scratch = fs::temp_directory_path() / ("actorpipe-runtime-bench-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const std::string default_job = root + "/configs/fashion-mnist.toml";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  // Throughput of the default model.
  std::cerr << "throughput: measuring the profile, then each runner (" << steps << " timed steps)\n";
  const Prepared two_by_one = prepare(default_job, {"plan.pipelines=1"}, plugins);
  const Prepared two_by_two = prepare(default_job, {"plan.pipelines=2"}, plugins, two_by_one.job.profile);
  const std::uint32_t batch = two_by_one.job.train.batch_size;
  const Rate single = libtorch(two_by_one.job, 1, steps);
  struct Row {
    std::string runner;
    std::optional<Rate> rate;
  };
  std::vector<Row> rows = {{"LibTorch, 1 thread", single},
                           {"LibTorch, 2 threads", libtorch(two_by_one.job, 2, steps)},
                           {"PyTorch eager, 1 thread", pytorch(root, 1, batch, steps)},
                           {"PyTorch eager, 2 threads", pytorch(root, 2, batch, steps)},
                           {"actorpipe, 2 stages × 1 pipeline", rate_of(run_steps(two_by_one, steps, scratch), batch)},
                           {"actorpipe, 2 stages × 2 pipelines", rate_of(run_steps(two_by_two, steps, scratch), batch)}};
  text::Table throughput({{"runner"},
                          {"samples/s", text::Table::Align::right},
                          {"step ms", text::Table::Align::right},
                          {"vs LibTorch 1 thread", text::Table::Align::right}});
  for (const Row& r : rows) {
    if (!r.rate) {
      throughput.add_row({r.runner, "n/a (python3 without torch)", "", ""});
      continue;
    }
    throughput.add_row({r.runner, text::format_fixed(r.rate->samples_per_s, 0), text::format_fixed(r.rate->step_ms, 2),
                        ratio(r.rate->samples_per_s, single.samples_per_s)});
  }

  // Per-hop overhead.
  std::cerr << "per hop: a tiny MLP through 8 stages and through 1\n";
  const std::uint64_t hop_steps = 20 * steps;
  auto hop_rate = [&](std::size_t stages) {
    const fs::path file = scratch / ("hops-" + std::to_string(stages) + ".toml");
    std::ofstream(file) << hop_job(stages);
    return rate_of(run_steps(prepare(file.string(), {}, plugins), hop_steps, scratch), 4);
  };
  const Rate one_stage = hop_rate(1), eight_stages = hop_rate(8);
  const double hop_us = (eight_stages.step_ms - one_stage.step_ms) * 1000.0 / 14.0;
  text::Table hops({{"pipeline"}, {"step µs (median)", text::Table::Align::right}, {"µs per hop", text::Table::Align::right}});
  hops.add_row({"1 stage", text::format_fixed(one_stage.step_ms * 1000.0, 1), ""});
  hops.add_row({"8 stages", text::format_fixed(eight_stages.step_ms * 1000.0, 1), text::format_fixed(hop_us, 1)});

  // Prediction error per schedule, one device per core.
  std::cerr << "prediction: the default job under each schedule\n";
  text::Table prediction({{"schedule"},
                          {"shape"},
                          {"measured ms", text::Table::Align::right},
                          {"predicted ms", text::Table::Align::right},
                          {"error", text::Table::Align::right}});
  const std::string pipelines = std::to_string(std::max(1u, cores / 2));
  for (const char* scheduler : {"gpipe", "1f1b", "sliced-1f1b"}) {
    const Prepared p = prepare(default_job,
                               {std::string("plan.scheduler=\"") + scheduler + "\"", "plan.pipelines=" + pipelines,
                                "plan.micro_batches=4"},
                               plugins, two_by_one.job.profile);
    const Rate measured = rate_of(run_steps(p, steps, scratch), batch);
    const double error = (p.plan.iteration_time_ms - measured.step_ms) / measured.step_ms;
    prediction.add_row({scheduler, std::to_string(p.plan.stages.size()) + " × " + pipelines + ", 4 micro-batches",
                        text::format_fixed(measured.step_ms, 2), text::format_fixed(p.plan.iteration_time_ms, 2),
                        (error >= 0 ? "+" : "") + text::format_fixed(100.0 * error, 1) + "%"});
  }
  fs::remove_all(scratch);

  std::cout << "throughput: the default job's CNN, batch " << batch << ", " << cores << " cores; " << steps
            << " timed steps after " << warmup_steps << "\n\n"
            << throughput.str() << "\nper hop: tiny MLP, 1 micro-batch of 4 samples, gpipe; (8-stage step − 1-stage step) / 14 hops\n\n"
            << hops.str() << "\nprediction: measured median step against the simulator's iteration time (profile measured here)\n\n"
            << prediction.str();
  return 0;
}
