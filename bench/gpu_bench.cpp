/// GPU benchmark (scripts/gpu_check.sh runs it): a GPT of the zoo big enough to keep
/// one GPU busy (12 layers, width 1024, 16 heads, context 512, Adam, bf16 by default),
/// on cuda:0, in one run:
///   actorpipe 1 × 1, and 2 and 4 stages × 1 pipeline (1F1B) with every stage on the one
///   GPU, each stage on a stream of its own; each eagerly and with CUDA graphs
///   (train.cuda_graphs false and true: "auto", the default, runs 1 × 1 eagerly and
///   replays graphs where stages share the GPU);
///   the same model and batch in a plain LibTorch training loop (train::SingleProcessTraining
///   on the GPU: whole batches, no actors);
///   PyTorch eager of the same architecture (bench/gpt_eager.py, through python3), with
///   Adam as PyTorch steps it on a GPU by default (multi-tensor) and with fused=True, the
///   kernel actorpipe's Adam runs on a GPU;
///   actorpipe 1 × 1 and the plain loop again in fp32 (TF32 off), for bf16's gain;
///   the hop between two stages on one GPU: a tiny MLP through 8 stages and through 1,
///   the extra step time over the 14 extra hops.
/// Each run: warm-up steps, then the median of the timed steps' times; samples/s is the
/// batch over that median; peak memory is the caching allocator's. Each starts with the
/// allocator's cache handed back, so the runs before it leave nothing reserved. Ratios are against
/// the plain loop of the same precision, measured in the same run.
///   build/bench/gpu_bench [SOURCE_ROOT] [--steps N] [--batch B] [--micro-batches M]
///                         [--layers L] [--width W] [--heads H] [--context T] [--json FILE]
///                         [--traces DIR]
/// --traces keeps each actorpipe run's Perfetto trace in DIR, and Kineto traces (every
/// GPU kernel with its time) of two steps of the plain loop (bf16, after every timed
/// run) and of PyTorch eager, to compare kernel by kernel (bench/kernel_table.py), and
/// of four steps of actorpipe 2 × 1 with every thread's operators.

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/training.hpp>

#include "base/statistics.hpp"
#include "base/text.hpp"
#include "base/text_table.hpp"
#include "device/cuda_queries.hpp"
#include "train/single_process.hpp"

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace actorpipe;
namespace fs = std::filesystem;

namespace {

struct Settings {
  fs::path source = ".";
  std::uint64_t steps = 20, warmup = 5;
  std::uint32_t batch = 32, micro_batches = 4, layers = 12, width = 1024, heads = 16, context = 512;
  std::string json;
  std::string traces;
};

struct Row {
  std::string name;
  std::string precision;
  double step_ms = 0;
  double samples_per_s = 0;
  double peak_bytes = 0;
};

[[noreturn]] void die(const std::string& what) {
  std::cerr << "gpu_bench: " << what << "\n";
  std::exit(1);
}

template <class T> T need(Result<T> r, const std::string& what) {
  if (!r) die(what + ": " + r.error().message);
  return std::move(*r);
}

/// A corpus of this tree's own text (docs, sources): enough 513-byte windows for any batch.
std::string write_corpus(const Settings& s, const fs::path& dir) {
  std::ostringstream text;
  for (const char* folder : {"docs", "runtime", "actors", "tests"})
    for (const auto& entry : fs::recursive_directory_iterator(s.source / folder)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".md" && ext != ".cpp" && ext != ".hpp")) continue;
      std::ifstream in(entry.path());
      text << in.rdbuf();
    }
  const fs::path file = dir / "corpus.txt";
  std::ofstream(file) << text.str();
  return file.string();
}

/// One server per stage, one GPU each: a one-process run puts every "SERVER/gpu0" on cuda:0.
std::string cluster_toml(std::size_t servers) {
  std::ostringstream t;
  t << "[cluster]\nname = \"one-gpu\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n";
  for (std::size_t s = 0; s < servers; ++s)
    t << "[[cluster.servers]]\nname = \"s" << s << "\"\n"
      << "pcie = { devices_per_switch = 1, switch_bandwidth = \"16 GB/s\", inter_bridge_bandwidth = \"16 GB/s\" }\n"
      << "nic = { count = 1, bandwidth = \"10 GB/s\" }\n"
      << "devices = [{ kind = \"GPU\", count = 1, speed = 1.0, memory = \"80 GiB\" }]\n";
  return t.str();
}

JobSpec gpt_job(const Settings& s, const fs::path& dir, const std::string& corpus, std::size_t stages,
                Precision precision) {
  std::ostringstream t;
  t << cluster_toml(stages) << "[job]\nname = \"gpu-bench\"\nseed = 1\n"
    << "[model]\nzoo = \"gpt\"\nlayers = " << s.layers << "\nwidth = " << s.width << "\nheads = " << s.heads
    << "\ncontext = " << s.context << "\n[data]\ndataset = \"text\"\npath = \"" << corpus << "\"\nseed = 1\n"
    << "[train]\nbatch_size = " << s.batch << "\nepochs = 1000\nevaluate_every = 1000\noptimizer = \"adam\"\n"
    << "lr = 0.0003\nprecision = \"" << precision_name(precision) << "\"\n"
    << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"1f1b\"\nsync = \"allreduce\"\n"
    << "stages = " << stages << "\npipelines = 1\nmicro_batches = " << (stages == 1 ? 1 : s.micro_batches) << "\n";
  const fs::path file = dir / ("gpt-" + std::to_string(stages) + "-" + precision_name(precision) + ".toml");
  std::ofstream(file) << t.str();
  return need(load_job(file.string()), file.string());
}

/// An actorpipe run of `job` (its profile given), timed step by step.
Row actorpipe_row(const std::string& name, JobSpec job, const ModelProfile& profile, const PluginRegistry& plugins,
                  const Settings& s, const fs::path& out) {
  device::release_cached_memory();
  job.profile = profile;
  const Plan plan = need(make_plan(job, plugins), name);
  std::vector<double> times;
  RunOptions options;
  options.steps = s.warmup + s.steps;
  options.output_dir = out.string();
  options.on_step = [&](const StepMetrics& m) {
    if (m.step > s.warmup) times.push_back(m.step_ms);
  };
  const RunSummary summary = need(run_training(job, plan, options), name);
  if (!s.traces.empty()) {
    std::string file = name + "-" + precision_name(job.train.precision) + ".trace.json";
    std::replace_if(
        file.begin(), file.end(),
        [](char c) { return !std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-'; }, '_');
    fs::create_directories(s.traces);
    fs::copy_file(out / "trace.json", fs::path(s.traces) / file, fs::copy_options::overwrite_existing);
  }
  Row row{name, precision_name(job.train.precision), median(times), 0,
          summary.peak_gpu_bytes.empty() ? 0.0 : static_cast<double>(summary.peak_gpu_bytes.front())};
  row.samples_per_s = row.step_ms > 0 ? job.train.batch_size / (row.step_ms / 1e3) : 0;
  return row;
}

/// `work` under LibTorch's profiler (Kineto, CUPTI for the GPU), saved as a Chrome
/// trace: the kernels it launches, each with its GPU time, and the operators every
/// thread ran (the stages' threads and the autograd engine's too, not only this one).
template <class Work> void kernel_trace(Work work, const fs::path& file) {
  namespace impl = torch::profiler::impl;
  impl::ExperimentalConfig every_thread;
  every_thread.profile_all_threads = true;
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO, false, false, false, false, false, every_thread);
  const std::set<impl::ActivityType> activities{impl::ActivityType::CPU, impl::ActivityType::CUDA};
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  work();
  torch::autograd::profiler::disableProfiler()->save(file.string());
}

Row libtorch_row(const std::string& name, const JobSpec& job, const Settings& s) {
  device::release_cached_memory();
  auto training = need(train::SingleProcessTraining::open(job, 0), name);
  device::reset_peak_memory();
  std::vector<double> times;
  for (std::uint64_t k = 0; k < s.warmup + s.steps; ++k) {
    const auto start = std::chrono::steady_clock::now();
    training->step(); // reads the loss: waits for the GPU, as a run's step does
    if (k >= s.warmup)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const auto peaks = device::peak_memory_bytes();
  Row row{name, precision_name(job.train.precision), median(times), 0, peaks.empty() ? 0.0 : double(peaks.front())};
  row.samples_per_s = job.train.batch_size / (row.step_ms / 1e3);
  return row;
}

Row eager_row(const Settings& s, const std::string& precision, bool fused) {
  std::ostringstream command;
  command << "python3 '" << (s.source / "bench" / "gpt_eager.py").string() << "' --layers " << s.layers << " --width "
          << s.width << " --heads " << s.heads << " --context " << s.context << " --batch " << s.batch << " --steps "
          << s.steps << " --warmup " << s.warmup << " --precision " << precision << (fused ? " --fused" : "");
  if (!s.traces.empty()) {
    fs::create_directories(s.traces);
    command << " --trace '"
            << (fs::path(s.traces) / ("eager-" + precision + (fused ? "-fused" : "") + ".kineto.json")).string() << "'";
  }
  std::FILE* pipe = ::popen(command.str().c_str(), "r");
  if (!pipe) die("cannot start python3");
  std::string out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe))
    out += buffer;
  if (::pclose(pipe) != 0) die("PyTorch eager failed: " + out);
  const auto json = nlohmann::json::parse(out.substr(out.rfind('{')));
  return {fused ? "PyTorch eager, fused Adam" : "PyTorch eager", precision, json["step_ms"].get<double>(),
          json["samples_per_s"].get<double>(), json["peak_bytes"].get<double>()};
}

/// The tiny MLP's step through `stages` stages on the one GPU.
double tiny_step_ms(std::size_t stages, const fs::path& dir, const PluginRegistry& plugins) {
  std::ostringstream t;
  t << cluster_toml(stages) << "[job]\nname = \"hop\"\nseed = 1\n[model]\nzoo = \"mlp\"\nlayers = 7\nwidth = 16\n"
    << "[data]\ndataset = \"synthetic\"\nsamples = 512\nshape = [16]\n[train]\nbatch_size = 4\nepochs = 1000\n"
    << "evaluate_every = 1000\n[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"1f1b\"\n"
    << "stages = " << stages << "\npipelines = 1\nmicro_batches = 1\n";
  const fs::path file = dir / ("hop-" + std::to_string(stages) + ".toml");
  std::ofstream(file) << t.str();
  JobSpec job = need(load_job(file.string()), "hop job");
  MeasureOptions quick;
  quick.warmup = 0;
  quick.repeats = 1;
  quick.load = 0;
  job.profile = need(measure_profile(job, quick), "hop profile");
  const Plan plan = need(make_plan(job, plugins), "hop plan");
  std::vector<double> times;
  RunOptions options;
  options.steps = 220;
  options.output_dir = (dir / ("hop-" + std::to_string(stages))).string();
  options.on_step = [&](const StepMetrics& m) {
    if (m.step > 20) times.push_back(m.step_ms);
  };
  need(run_training(job, plan, options), "hop run");
  return median(times);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--steps")
      s.steps = std::stoull(next());
    else if (a == "--batch")
      s.batch = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--micro-batches")
      s.micro_batches = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--layers")
      s.layers = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--width")
      s.width = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--heads")
      s.heads = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--context")
      s.context = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--json")
      s.json = next();
    else if (a == "--traces")
      s.traces = next();
    else if (!a.starts_with("--"))
      s.source = a;
    else
      die("unknown option " + a);
  }
  return s;
}

} // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  const auto gpus = device::query_gpus();
  if (!gpus) {
    std::cout << "gpu_bench: skipped: " << gpus.error().message << "\n";
    return 77;
  }
  std::cout << "gpu_bench on " << gpus->front().name << ", " << device::libtorch_text() << ": GPT " << s.layers
            << " layers × " << s.width << " wide, " << s.heads << " heads, context " << s.context << ", batch "
            << s.batch << " (" << s.micro_batches << " micro-batches past one stage), " << s.steps
            << " timed steps after " << s.warmup << "\n";
  const fs::path dir = fs::temp_directory_path() / ("actorpipe-gpu-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string corpus = write_corpus(s, dir);
  const PluginRegistry plugins = need(PluginRegistry::discover(PluginRegistry::default_folders()), "plugins");

  // One profile for every shape: the same model. Measured on the CPU at one sample, once
  // and quickly: with the uniform partitioner it only has to name the blocks.
  JobSpec bf16_one = gpt_job(s, dir, corpus, 1, Precision::bf16);
  MeasureOptions quick;
  quick.batch_size = 1;
  quick.warmup = 0;
  quick.repeats = 1;
  quick.load = 0;
  const ModelProfile profile = need(measure_profile(bf16_one, quick), "profile");

  std::vector<Row> rows;
  const auto progress = [&](const Row& r) {
    std::cout << "  " << r.name << " (" << r.precision << "): " << text::format_fixed(r.step_ms, 1) << " ms/step\n"
              << std::flush;
    rows.push_back(r);
  };
  progress(libtorch_row("plain LibTorch loop", bf16_one, s));
  progress(eager_row(s, "bf16", false));
  progress(eager_row(s, "bf16", true));
  for (const bool graphs : {false, true})
    for (const std::size_t stages : {1u, 2u, 4u}) {
      JobSpec job = gpt_job(s, dir, corpus, stages, Precision::bf16);
      job.train.cuda_graphs = graphs ? CudaGraphs::on : CudaGraphs::off;
      const std::string name = "actorpipe " + std::to_string(stages) + " × 1" + (graphs ? ", CUDA graphs" : "");
      progress(actorpipe_row(name, job, profile, plugins, s,
                             dir / ("run-" + std::to_string(stages) + (graphs ? "-graphs" : ""))));
    }
  const JobSpec fp32_one = gpt_job(s, dir, corpus, 1, Precision::fp32);
  progress(libtorch_row("plain LibTorch loop", fp32_one, s));
  progress(actorpipe_row("actorpipe 1 × 1", fp32_one, profile, plugins, s, dir / "run-fp32"));

  std::map<std::string, double> plain; // by precision
  for (const Row& r : rows)
    if (r.name == "plain LibTorch loop") plain[r.precision] = r.samples_per_s;
  text::Table table({{"runner"},
                     {"precision"},
                     {"samples/s", text::Table::Align::right},
                     {"step ms", text::Table::Align::right},
                     {"peak memory", text::Table::Align::right},
                     {"× plain loop", text::Table::Align::right}});
  nlohmann::json out = {{"gpu", gpus->front().name}, {"libtorch", device::libtorch_text()}};
  for (const Row& r : rows) {
    table.add_row({r.name, r.precision, text::format_fixed(r.samples_per_s, 1), text::format_fixed(r.step_ms, 2),
                   text::format_bytes(static_cast<std::uint64_t>(r.peak_bytes)),
                   text::format_fixed(r.samples_per_s / plain[r.precision], 3)});
    out["runs"].push_back({{"runner", r.name},
                           {"precision", r.precision},
                           {"samples_per_s", r.samples_per_s},
                           {"step_ms", r.step_ms},
                           {"peak_bytes", r.peak_bytes},
                           {"ratio_to_plain_loop", r.samples_per_s / plain[r.precision]}});
  }
  std::cout << "\nthroughput\n" << table.str();
  for (const Row& r : rows)
    if (r.name == "actorpipe 1 × 1" && r.precision == "bf16")
      for (const Row& f : rows)
        if (f.name == "actorpipe 1 × 1" && f.precision == "fp32") {
          std::cout << "bf16 against fp32, actorpipe 1 × 1: "
                    << text::format_fixed(r.samples_per_s / f.samples_per_s, 2) << "×\n";
          out["bf16_over_fp32"] = r.samples_per_s / f.samples_per_s;
        }

  const double one = tiny_step_ms(1, dir, plugins), eight = tiny_step_ms(8, dir, plugins);
  const double hop_us = (eight - one) / 14 * 1e3;
  std::cout << "\nper hop (tiny MLP, batch 4, on the one GPU): step " << text::format_fixed(one, 3)
            << " ms through 1 stage, " << text::format_fixed(eight, 3)
            << " ms through 8: " << text::format_fixed(hop_us, 1) << " µs a hop\n";
  out["hop_us"] = hop_us;
  if (!s.traces.empty()) {
    // Last, after every timed run: once the profiler has run, LibTorch's host side
    // stays slower in this process (a stage's forwards took twice the host time).
    auto training = need(train::SingleProcessTraining::open(bf16_one, 0), "kernel trace");
    for (std::uint64_t k = 0; k < s.warmup; ++k)
      training->step();
    fs::create_directories(s.traces);
    kernel_trace(
        [&] {
          for (int k = 0; k < 2; ++k)
            training->step();
        },
        fs::path(s.traces) / "plain-loop-bf16.kineto.json");
    // Two stages on the one GPU, whose step is bound by the host where LibTorch's
    // per-operator cost is high: where each thread's time goes, the autograd engine's
    // (every backward on one GPU runs on its one thread) beside the stages'.
    JobSpec two = gpt_job(s, dir, corpus, 2, Precision::bf16);
    two.profile = profile;
    two.train.cuda_graphs = CudaGraphs::off;
    const Plan plan = need(make_plan(two, plugins), "traced 2 × 1");
    RunOptions options;
    options.steps = 4;
    options.output_dir = (dir / "run-traced").string();
    kernel_trace([&] { need(run_training(two, plan, options), "traced 2 × 1"); },
                 fs::path(s.traces) / "actorpipe-2x1-bf16.kineto.json");
  }
  if (!s.json.empty()) std::ofstream(s.json) << out.dump(2) << "\n";
  fs::remove_all(dir);
  return 0;
}
