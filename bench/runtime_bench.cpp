/// Runtime benchmark, three tables measured in one run on this machine's CPU:
///   throughput  the default job's CNN (configs/fashion-mnist.toml, batch 128): actorpipe
///               with 2 stages × 1 and × 2 pipelines, and data parallel alone (1 stage
///               × 2 pipelines), against single-process LibTorch with 1 and 2 threads
///               and PyTorch eager (Debian's python3-torch) with 1 and 2 threads, on
///               the same model and batch; and one single-thread LibTorch training per
///               core side by side, with nothing between them, and in lockstep on
///               shares of the batch (synchronous data parallelism without averaging);
///   per hop     a tiny MLP, one micro-batch of 4 samples, through 8 stages and through
///               1: the extra step time over the 14 extra hops (7 forward, 7 backward),
///               which also counts each extra stage's own autograd and optimizer calls;
///               and, from the 8-stage run's trace, the message latency of a hop: from
///               a stage's compute end to its neighbour's compute start, beside the
///               operating system's own thread hand-off, the floor under it (between
///               threads bound to one core, as stage actors that outnumber the cores
///               are, and between threads the OS places, as with --no-pin);
///   prediction  the measured iteration time of the default job per schedule against
///               the simulator's prediction from profiles measured just before and
///               just after the run (the mean of the two).
/// Steps are timed after warm-up steps; a run's rate is samples over the summed step
/// times of its timed steps. actorpipe runs as `actorpipe run` (built beside this), one
/// process per run, on a profile `actorpipe profile` measured here.
///   build/bench/runtime_bench [SOURCE_ROOT] [--steps N] [--rounds R]   (R: interleaved rounds, 5)

#include <actorpipe/job.hpp>

#include "text.hpp"
#include "text_table.hpp"
#include "train/cores.hpp"
#include "train/single_process.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <barrier>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using namespace actorpipe;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t warmup_steps = 10;

struct Rate {
  double samples_per_s = 0;
  double step_ms = 0; ///< median of the timed steps
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

Rate rate_of(std::vector<double> step_ms, std::uint32_t batch) {
  double total = 0;
  for (double ms : step_ms) total += ms;
  return {static_cast<double>(batch) * static_cast<double>(step_ms.size()) / (total / 1000.0), median(step_ms)};
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

/// Runs `actorpipe run` in a process of its own, so that no runner inherits another's
/// threads or heap, and reads back what it wrote.
struct Cli {
  fs::path actorpipe, scratch;
  fs::path profile; ///< measured by `actorpipe profile`, given to every run of the default job

  struct Outcome {
    std::vector<double> step_ms; ///< of the timed steps
    double predicted_ms = 0;     ///< the plan's simulated iteration time
    fs::path trace;
  };

  /// Measures `job`'s profile into `profile`, which later runs use.
  void measure_profile(const std::string& job) {
    profile = scratch / "profile.toml";
    shell("'" + actorpipe.string() + "' profile '" + job + "' -o '" + profile.string() + "'");
  }

  void shell(const std::string& command) const {
    const fs::path errors = scratch / "stderr.txt";
    if (std::system((command + " >/dev/null 2>'" + errors.string() + "'").c_str()) != 0) {
      std::ifstream in(errors);
      fail(command + ":\n" + std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }

  /// The iteration time `actorpipe plan` predicts for `job` with `sets` and the profile.
  double predict(const std::string& job, std::vector<std::string> sets) const {
    if (!profile.empty()) sets.push_back("model.profile=\"" + profile.string() + "\"");
    const fs::path out = scratch / "plan.json";
    std::string command = "'" + actorpipe.string() + "' plan '" + job + "' -o '" + out.string() + "'";
    for (const std::string& set : sets) command += " --set '" + set + "'";
    shell(command);
    return nlohmann::json::parse(std::ifstream(out))["iteration_time_ms"];
  }

  /// `flags`: more of `actorpipe run`'s, such as --no-pin.
  Outcome run(const std::string& job, std::vector<std::string> sets, std::uint64_t steps,
              const std::string& flags = "") const {
    if (!profile.empty()) sets.push_back("model.profile=\"" + profile.string() + "\"");
    const fs::path out = scratch / "run";
    fs::remove_all(out);
    std::string command = "'" + actorpipe.string() + "' run '" + job + "' --steps " +
                          std::to_string(warmup_steps + steps) + " -o '" + out.string() + "' --json " + flags;
    for (const std::string& set : sets) command += " --set '" + set + "'";
    shell(command);
    Outcome o;
    std::ifstream metrics(out / "metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) {
      const auto m = nlohmann::json::parse(line);
      if (m["kind"] == "step" && m["step"].get<std::uint64_t>() > warmup_steps) o.step_ms.push_back(m["step_ms"]);
    }
    o.predicted_ms = nlohmann::json::parse(std::ifstream(out / "plan.json"))["iteration_time_ms"];
    o.trace = out / "trace.json";
    if (o.step_ms.empty()) fail(command + ": no timed steps in " + (out / "metrics.jsonl").string());
    return o;
  }
};

/// Median message latency of forward and of backward hops in a run's trace (µs): for
/// each micro-batch, from the end of its compute on one stage to the start of its
/// compute on the next (forward) or previous (backward) stage of the same pipeline.
struct HopLatency {
  double forward_us = 0, backward_us = 0;
};

HopLatency hop_latency(const fs::path& trace_file) {
  const auto trace = nlohmann::json::parse(std::ifstream(trace_file));
  // "stage S (DEVICE)" per (pid, tid); spans "forward M" / "backward M" in order.
  std::map<std::pair<int, int>, std::size_t> stage_of;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      stage_of[{e["pid"], e["tid"]}] = std::stoul(e["args"]["name"].get<std::string>().substr(6));
  struct Span {
    double begin, end;
  };
  // [pipeline pid][stage][kind] → spans in time order.
  std::map<int, std::map<std::size_t, std::map<std::string, std::vector<Span>>>> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    const std::string kind = name.substr(0, name.find(' '));
    if (kind != "forward" && kind != "backward") continue;
    const double ts = e["ts"], dur = e["dur"];
    spans[e["pid"]][stage_of[{e["pid"], e["tid"]}]][kind].push_back({ts, ts + dur});
  }
  std::vector<double> forward, backward;
  for (auto& [pid, stages] : spans)
    for (std::size_t s = 0; s + 1 < stages.size(); ++s) {
      const auto& f0 = stages[s]["forward"];
      const auto& f1 = stages[s + 1]["forward"];
      const auto& b0 = stages[s]["backward"];
      const auto& b1 = stages[s + 1]["backward"];
      for (std::size_t k = 0; k < std::min(f0.size(), f1.size()); ++k) forward.push_back(f1[k].begin - f0[k].end);
      for (std::size_t k = 0; k < std::min(b0.size(), b1.size()); ++k) backward.push_back(b0[k].begin - b1[k].end);
    }
  return {median(forward), median(backward)};
}

/// The floor under a hop: the operating system handing a pointer to a thread blocked
/// on a mutex and condition variable, timed from before the notify to when the receiver
/// runs (median µs over `passes` hand-offs). With `sender_computes` the sender goes on
/// computing for 50 µs, as a stage runs its optimizer step after sending a gradient
/// back; else it blocks at once, as a stage does after a forward send. The receiver
/// answers at once and blocks again, so it is always waiting when timed. With `core`
/// both threads are bound to that one core and the sender yields it after the notify,
/// as stage actors bound to a shared core do; else the operating system places them
/// (on two cores, when it can).
double os_handoff_us(bool sender_computes, std::optional<int> core, int passes = 1500) {
  using Clock = std::chrono::steady_clock;
  struct Slot {
    std::mutex mutex;
    std::condition_variable ready;
    bool full = false;
    Clock::time_point sent;
  };
  Slot to_receiver, to_sender;
  std::vector<double> latencies;
  auto pass = [&](Slot& slot) {
    {
      std::lock_guard<std::mutex> lock(slot.mutex);
      slot.full = true;
      slot.sent = Clock::now();
    }
    slot.ready.notify_one();
    if (core) std::this_thread::yield();
  };
  /// Waits for `slot`; the µs since it was filled.
  auto take = [&](Slot& slot) {
    std::unique_lock<std::mutex> lock(slot.mutex);
    slot.ready.wait(lock, [&] { return slot.full; });
    slot.full = false;
    return std::chrono::duration<double, std::micro>(Clock::now() - slot.sent).count();
  };
  std::thread receiver([&] {
    if (core) train::bind_thread_to(*core);
    for (int i = 0; i < passes; ++i) {
      latencies.push_back(take(to_receiver));
      pass(to_sender);
    }
  });
  std::thread([&] {
    if (core) train::bind_thread_to(*core);
    for (int i = 0; i < passes; ++i) {
      pass(to_receiver);
      if (sender_computes)
        for (const auto until = Clock::now() + std::chrono::microseconds(50); Clock::now() < until;) {
        }
      take(to_sender);
    }
  }).join();
  receiver.join();
  return median(latencies);
}

/// The times (ms) of `steps` steps after the warm-up ones; `after_step` runs inside each.
std::vector<double> timed_steps(train::SingleProcessTraining& training, std::uint64_t steps,
                                const std::function<void()>& after_step = {}) {
  std::vector<double> times;
  for (std::uint64_t k = 0; k < warmup_steps + steps; ++k) {
    const auto start = std::chrono::steady_clock::now();
    training.step();
    if (after_step) after_step();
    if (k >= warmup_steps)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return times;
}

Rate libtorch(const JobSpec& job, int threads, std::uint64_t steps) {
  torch::set_num_threads(threads);
  auto training = need(train::SingleProcessTraining::open(job));
  const std::vector<double> times = timed_steps(*training, steps);
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return rate_of(times, job.train.batch_size);
}

/// `copies` single-thread trainings side by side, one per thread, exchanging nothing:
/// the sum of their rates. Free, each trains the whole batch at its own pace: what the
/// cores reach with no coordination at all. In lockstep, each trains its share of the
/// batch and all wait for the slowest after every step, as synchronous data
/// parallelism must, but average nothing: what synchronous data parallelism over these
/// cores would reach for free, paying only for one core running slower than another.
Rate libtorch_side_by_side(const JobSpec& job, unsigned copies, std::uint64_t steps, bool lockstep) {
  JobSpec copy_job = job;
  if (lockstep) copy_job.train.batch_size = job.train.batch_size / copies;
  std::vector<std::unique_ptr<train::SingleProcessTraining>> trainings;
  for (unsigned c = 0; c < copies; ++c) trainings.push_back(need(train::SingleProcessTraining::open(copy_job)));
  std::vector<Rate> rates(copies);
  std::latch start(copies);
  std::barrier step_done(copies);
  {
    std::vector<std::jthread> threads;
    for (unsigned c = 0; c < copies; ++c)
      threads.emplace_back([&, c] {
        torch::set_num_threads(1);
        start.arrive_and_wait();
        const std::vector<double> times = timed_steps(*trainings[c], steps, [&] {
          if (lockstep) step_done.arrive_and_wait();
        });
        rates[c] = rate_of(times, copy_job.train.batch_size);
      });
  }
  torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Rate sum;
  std::vector<double> step_ms;
  for (const Rate& r : rates) {
    sum.samples_per_s += r.samples_per_s;
    step_ms.push_back(r.step_ms);
  }
  sum.step_ms = median(step_ms);
  return sum;
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

/// The round of median throughput; nullopt when there is none.
std::optional<Rate> median_round(std::vector<Rate> rounds) {
  if (rounds.empty()) return std::nullopt;
  std::sort(rounds.begin(), rounds.end(), [](const Rate& a, const Rate& b) { return a.samples_per_s < b.samples_per_s; });
  return rounds[rounds.size() / 2];
}

std::string ratio(double value, double base) { return text::format_fixed(value / base, 2) + "×"; }

} // namespace

int main(int argc, char** argv) {
  std::string root = ".";
  std::uint64_t steps = 60, rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::stoull(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::max<std::uint64_t>(1, std::stoull(argv[++i]));
    else root = a;
  }
  const fs::path scratch = fs::temp_directory_path() / ("actorpipe-runtime-bench-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const std::string default_job = root + "/configs/fashion-mnist.toml";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  Cli cli{fs::canonical(argv[0]).parent_path().parent_path() / "runtime/cli/actorpipe", scratch, {}};
  if (!fs::exists(cli.actorpipe)) fail(cli.actorpipe.string() + ": not built");

  // Throughput of the default model.
  std::cerr << "throughput: measuring the profile, then each runner (" << steps << " timed steps)\n";
  cli.measure_profile(default_job);
  const JobSpec job = need(load_job(default_job));
  const std::uint32_t batch = job.train.batch_size;
  // Each round measures every runner once, in turn, so that a slow spell of a shared
  // machine falls on all of them; each runner's row is its median round.
  struct Row {
    std::string runner;
    std::function<std::optional<Rate>()> measure;
    std::vector<Rate> rounds;
    std::optional<Rate> rate;
  };
  auto actorpipe = [&](std::vector<std::string> overrides) {
    return [&cli, &default_job, overrides, steps, batch]() -> std::optional<Rate> {
      return rate_of(cli.run(default_job, overrides, steps).step_ms, batch);
    };
  };
  std::vector<Row> rows;
  rows.push_back({"LibTorch, 1 thread", [&] { return std::optional<Rate>(libtorch(job, 1, steps)); }, {}, {}});
  rows.push_back({"LibTorch, 2 threads", [&] { return std::optional<Rate>(libtorch(job, 2, steps)); }, {}, {}});
  rows.push_back({"LibTorch, " + std::to_string(cores) + " independent copies of 1 thread (no coordination)",
                  [&] { return std::optional<Rate>(libtorch_side_by_side(job, cores, steps, false)); }, {}, {}});
  rows.push_back({"LibTorch, " + std::to_string(cores) + " copies of 1 thread in lockstep on shares of the batch (sync DP, no averaging)",
                  [&] { return std::optional<Rate>(libtorch_side_by_side(job, cores, steps, true)); }, {}, {}});
  rows.push_back({"PyTorch eager, 1 thread", [&] { return pytorch(root, 1, batch, steps); }, {}, {}});
  rows.push_back({"PyTorch eager, 2 threads", [&] { return pytorch(root, 2, batch, steps); }, {}, {}});
  rows.push_back({"actorpipe, 2 stages × 1 pipeline", actorpipe({"plan.pipelines=1"}), {}, {}});
  rows.push_back({"actorpipe, 2 stages × 2 pipelines", actorpipe({"plan.pipelines=2"}), {}, {}});
  // Data parallelism alone: what two replicas of one thread each reach.
  rows.push_back({"actorpipe, 1 stage × 2 pipelines, 1 micro-batch",
                  actorpipe({"plan.stages=1", "plan.pipelines=2", "plan.micro_batches=1"}), {}, {}});
  for (std::uint64_t round = 0; round < rounds; ++round)
    for (Row& r : rows)
      if (std::optional<Rate> rate = r.measure()) r.rounds.push_back(*rate);
  for (Row& r : rows) r.rate = median_round(r.rounds);
  const Rate single = *rows.front().rate;
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
  HopLatency latency;
  HopLatency unbound_latency;
  auto hop_rate = [&](std::size_t stages, HopLatency* hops, const std::string& flags) {
    const fs::path file = scratch / ("hops-" + std::to_string(stages) + ".toml");
    std::ofstream(file) << hop_job(stages);
    Cli tiny = cli;
    tiny.profile.clear(); // the MLP's own, measured by the run
    const Cli::Outcome o = tiny.run(file.string(), {}, hop_steps, flags);
    if (hops) *hops = hop_latency(o.trace);
    return rate_of(o.step_ms, 4);
  };
  const Rate one_stage = hop_rate(1, nullptr, "");
  // More stage actors than cores: bound, pipeline neighbours share a core, unless
  // --no-pin leaves them to the operating system.
  const Rate eight_stages = hop_rate(8, &latency, ""), eight_unbound = hop_rate(8, &unbound_latency, "--no-pin");
  const double hop_us = (eight_stages.step_ms - one_stage.step_ms) * 1000.0 / 14.0;
  const double unbound_hop_us = (eight_unbound.step_ms - one_stage.step_ms) * 1000.0 / 14.0;
  const int one_core = train::usable_cores().front();
  // The floor is the best the OS does, the least of three measurements. On one core it
  // is a switch to the receiver as the sender blocks, in both directions: a sender that
  // yields and computes on waits for the scheduler to honour the yield, which it does in
  // some measurements and not in others (1 or 52 µs).
  auto best_handoff_us = [](bool sender_computes, std::optional<int> core) {
    double best = os_handoff_us(sender_computes, core);
    for (int k = 1; k < 3; ++k) best = std::min(best, os_handoff_us(sender_computes, core));
    return best;
  };
  const HopLatency floor{best_handoff_us(false, std::nullopt), best_handoff_us(true, std::nullopt)};
  const double one_core_switch = best_handoff_us(false, one_core);
  const HopLatency one_core_floor{one_core_switch, one_core_switch};
  auto latencies = [](const HopLatency& l) {
    return text::format_fixed(l.forward_us, 1) + " / " + text::format_fixed(l.backward_us, 1) + " / " +
           text::format_fixed((l.forward_us + l.backward_us) / 2, 1);
  };
  text::Table hops({{"pipeline"},
                    {"step µs (median)", text::Table::Align::right},
                    {"µs per hop, end to end", text::Table::Align::right},
                    {"hop latency µs, forward / backward / mean", text::Table::Align::right},
                    {"above the OS hand-off", text::Table::Align::right}});
  hops.add_row({"1 stage", text::format_fixed(one_stage.step_ms * 1000.0, 1), "", "", ""});
  auto above = [&](const HopLatency& l, const HopLatency& f) {
    return latencies({l.forward_us - f.forward_us, l.backward_us - f.backward_us});
  };
  const bool bound = 8 > train::usable_cores().size();
  hops.add_row({bound ? "8 stages, neighbours bound to a shared core" : "8 stages",
                text::format_fixed(eight_stages.step_ms * 1000.0, 1), text::format_fixed(hop_us, 1), latencies(latency),
                above(latency, bound ? one_core_floor : floor)});
  if (bound)
    hops.add_row({"8 stages, --no-pin", text::format_fixed(eight_unbound.step_ms * 1000.0, 1),
                  text::format_fixed(unbound_hop_us, 1), latencies(unbound_latency), above(unbound_latency, floor)});
  hops.add_row({"OS hand-off, threads on one core (a switch)", "", "", latencies(one_core_floor), ""});
  hops.add_row({"OS hand-off, threads placed by the OS", "", "", latencies(floor), ""});

  // Prediction error per schedule, one device per core. Every run lies between two
  // profiles, measured just before and just after it, and is held against the mean of
  // their predictions: a shared machine's speed drifts over the seconds of a round, and
  // so it weighs on a prediction and the measurement it is held against alike.
  std::cerr << "prediction: the default job under each schedule between profiles, per round\n";
  text::Table prediction({{"schedule"},
                          {"shape"},
                          {"measured ms", text::Table::Align::right},
                          {"predicted ms", text::Table::Align::right},
                          {"error (median)", text::Table::Align::right},
                          {"error per round", text::Table::Align::right}});
  const std::string pipelines = std::to_string(std::max(1u, cores / 2));
  const std::vector<std::string> schedulers = {"gpipe", "1f1b", "sliced-1f1b"};
  struct Paired {
    std::vector<double> measured, predicted, error;
  };
  std::vector<Paired> paired(schedulers.size());
  for (std::uint64_t round = 0; round < rounds; ++round) {
    cli.measure_profile(default_job);
    for (std::size_t k = 0; k < schedulers.size(); ++k) {
      const std::vector<std::string> sets{"plan.scheduler=\"" + schedulers[k] + "\"", "plan.pipelines=" + pipelines,
                                          "plan.micro_batches=4"};
      const Cli::Outcome o = cli.run(default_job, sets, steps); // predicted from the profile before
      cli.measure_profile(default_job);                         // the next run's profile before
      const double predicted = (o.predicted_ms + cli.predict(default_job, sets)) / 2;
      const double measured = rate_of(o.step_ms, batch).step_ms;
      paired[k].measured.push_back(measured);
      paired[k].predicted.push_back(predicted);
      paired[k].error.push_back((predicted - measured) / measured);
    }
  }
  auto percent = [](double error) {
    return (error >= 0 ? "+" : "") + text::format_fixed(100.0 * error, 1) + "%";
  };
  for (std::size_t k = 0; k < schedulers.size(); ++k) {
    std::string each;
    for (double e : paired[k].error) each += (each.empty() ? "" : " ") + percent(e);
    prediction.add_row({schedulers[k], std::to_string(job.plan.stages) + " × " + pipelines + ", 4 micro-batches",
                        text::format_fixed(median(paired[k].measured), 2),
                        text::format_fixed(median(paired[k].predicted), 2), percent(median(paired[k].error)), each});
  }
  fs::remove_all(scratch);

  std::cout << "throughput: the default job's CNN, batch " << batch << ", " << cores << " cores; " << steps
            << " timed steps after " << warmup_steps << "; the median of " << rounds << " interleaved rounds\n\n"
            << throughput.str()
            << "\nper hop: tiny MLP, 1 micro-batch of 4 samples, gpipe; end to end = (8-stage step − 1-stage step) / 14 hops;\n"
               "latency = a stage's compute end to its neighbour's compute start, from the 8-stage trace; the OS\n"
               "hand-off passes a pointer to a thread blocked on a condition variable while the sender blocks\n"
               "(as after a forward send) / computes on (as after a backward send); on one core it is the switch to\n"
               "the receiver as the sender blocks, the least a hand-off there costs\n\n"
            << hops.str()
            << "\nprediction: the simulator's iteration time, the mean of its predictions from profiles measured\n"
               "just before and just after each run (`actorpipe profile`, the other cores busy), against the run's\n"
               "median step\n\n"
            << prediction.str();
  return 0;
}
