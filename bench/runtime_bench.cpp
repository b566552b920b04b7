/// Runtime benchmark, three tables measured in one run on this machine's CPU:
///   throughput  the default job's CNN (configs/fashion-mnist.toml, batch 128): actorpipe
///               with 2 stages × 1 and × 2 pipelines, and data parallel alone (1 stage
///               × 2 pipelines), against single-process LibTorch with 1 and 2 threads
///               and PyTorch eager (python3's torch, the build's) with 1 and 2 threads, on
///               the same model and batch; and one single-thread LibTorch training per
///               core side by side, with nothing between them, and in lockstep on
///               shares of the batch (synchronous data parallelism without averaging);
///   processes   the default job as it is under `actorpipe run` (one process) and under
///               `actorpipe launch --nprocs 2` and `--nprocs 4` (its stages in worker
///               processes, tensors between them through c10d; `--nprocs 2` also with
///               the workers sharing every core, `--bind none`), and both again with
///               `sdpipe`, asynchronous `elastic` and `parameter-server` for sync, in
///               interleaved rounds: samples/s against the one process's with the same
///               sync, of the same round;
///   per hop     a tiny MLP, one micro-batch of 4 samples, through 8 stages and through
///               1: the extra step time over the 14 extra hops (7 forward, 7 backward),
///               which also counts each extra stage's own autograd and optimizer calls;
///               and, from the 8-stage run's trace, the message latency of a hop: from
///               a stage's compute end to its neighbour's compute start, beside the
///               operating system's own thread hand-off, the floor under it (between
///               threads bound to one core, as stage actors that outnumber the cores
///               are, and between threads the OS places, as with --no-pin);
///   prediction  the measured iteration time of the default job per schedule (a
///               device per core), and of the default job as it is (its stage actors
///               may share cores) with its CNN, the other built-in models (mlp; gpt on
///               README.md as text) and two TorchScript models (tests/fixtures: a
///               conv-conv-linear-linear, and a LeNet with BatchNorm and Dropout),
///               against the prediction `actorpipe run` makes from profiles of the
///               model measured just before and just after the run (the mean).
/// Steps are timed after warm-up steps; a run's rate is samples over the summed step
/// times of its timed steps. actorpipe runs as `actorpipe run` (built beside this), one
/// process per run, on a profile `actorpipe profile` measured here.
///   build/bench/runtime_bench [SOURCE_ROOT] [--steps N] [--rounds R]
///                             [--tables throughput,processes,hops,prediction]
///   (R: interleaved rounds, 5; --tables: which tables, all by default)

#include "runtime/actorpipe_runs.hpp"
#include "runtime/baselines.hpp"
#include "runtime/bench_support.hpp"
#include "runtime/os_handoff.hpp"

#include <actorpipe/job.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"
#include "train/cores.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace actorpipe;
using namespace actorpipe::bench;
namespace fs = std::filesystem;

namespace {

/// The round of median throughput; nullopt when there is none.
std::optional<Rate> median_round(std::vector<Rate> rounds) {
  if (rounds.empty()) return std::nullopt;
  std::sort(rounds.begin(), rounds.end(),
            [](const Rate& a, const Rate& b) { return a.samples_per_s < b.samples_per_s; });
  return rounds[rounds.size() / 2];
}

std::string ratio(double value, double base) { return text::format_fixed(value / base, 2) + "×"; }

} // namespace

int main(int argc, char** argv) {
  std::string root = ".";
  std::uint64_t steps = 60, rounds = 5;
  std::string tables = "throughput,processes,hops,prediction";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      steps = std::stoull(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max<std::uint64_t>(1, std::stoull(argv[++i]));
    else if (a == "--tables" && i + 1 < argc)
      tables = argv[++i];
    else
      root = a;
  }
  auto wanted = [&](const std::string& table) {
    return ("," + tables + ",").find("," + table + ",") != std::string::npos;
  };
  const fs::path scratch = fs::temp_directory_path() / ("actorpipe-runtime-bench-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const std::string default_job = root + "/configs/fashion-mnist.toml";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  Cli cli{fs::canonical(argv[0]).parent_path().parent_path() / "runtime/cli/actorpipe", scratch, {}};
  if (!fs::exists(cli.actorpipe)) fail(cli.actorpipe.string() + ": not built");
  const JobSpec job = need(load_job(default_job));
  const std::uint32_t batch = job.train.batch_size;
  if (wanted("throughput")) {
    // Throughput of the default model.
    std::cerr << "throughput: measuring the profile, then each runner (" << steps << " timed steps)\n";
    cli.measure_profile(default_job);
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
                    [&] { return std::optional<Rate>(libtorch_side_by_side(job, cores, steps, false)); },
                    {},
                    {}});
    rows.push_back({"LibTorch, " + std::to_string(cores) +
                        " copies of 1 thread in lockstep on shares of the batch (sync DP, no averaging)",
                    [&] { return std::optional<Rate>(libtorch_side_by_side(job, cores, steps, true)); },
                    {},
                    {}});
    rows.push_back({"PyTorch eager, 1 thread", [&] { return pytorch(root, 1, batch, steps); }, {}, {}});
    rows.push_back({"PyTorch eager, 2 threads", [&] { return pytorch(root, 2, batch, steps); }, {}, {}});
    rows.push_back({"actorpipe, 2 stages × 1 pipeline", actorpipe({"plan.pipelines=1"}), {}, {}});
    rows.push_back({"actorpipe, 2 stages × 2 pipelines", actorpipe({"plan.pipelines=2"}), {}, {}});
    // Data parallelism alone: what two replicas of one thread each reach.
    rows.push_back({"actorpipe, 1 stage × 2 pipelines, 1 micro-batch",
                    actorpipe({"plan.stages=1", "plan.pipelines=2", "plan.micro_batches=1"}),
                    {},
                    {}});
    for (std::uint64_t round = 0; round < rounds; ++round)
      for (Row& r : rows)
        if (std::optional<Rate> rate = r.measure()) r.rounds.push_back(*rate);
    for (Row& r : rows)
      r.rate = median_round(r.rounds);
    const Rate single = *rows.front().rate;
    text::Table throughput({{"runner"},
                            {"samples/s", text::Table::Align::right},
                            {"step ms", text::Table::Align::right},
                            {"vs LibTorch 1 thread", text::Table::Align::right},
                            {"per round, least to most", text::Table::Align::right}});
    for (const Row& r : rows) {
      if (!r.rate) {
        throughput.add_row({r.runner, "n/a (no python3 with torch)", "", "", ""});
        continue;
      }
      // Against LibTorch's 1 thread in the same round: how far a shared machine's spells
      // move the ratio from one round to the next.
      std::vector<double> per_round;
      for (std::size_t k = 0; k < r.rounds.size(); ++k)
        per_round.push_back(r.rounds[k].samples_per_s / rows.front().rounds[k].samples_per_s);
      const auto [least, most] = std::minmax_element(per_round.begin(), per_round.end());
      throughput.add_row({r.runner, text::format_fixed(r.rate->samples_per_s, 0),
                          text::format_fixed(r.rate->step_ms, 2), ratio(r.rate->samples_per_s, single.samples_per_s),
                          ratio(*least, 1.0) + " – " + ratio(*most, 1.0)});
    }

    std::cout << "throughput: the default job's CNN, batch " << batch << ", " << cores << " cores; " << steps
              << " timed steps after " << warmup_steps << "; the median of " << rounds << " interleaved rounds\n\n"
              << throughput.str();
  }
  if (wanted("processes")) {
    std::cerr << "processes: the default job in one process and under launch (" << steps << " timed steps)\n";
    if (cli.profile.empty()) cli.measure_profile(default_job);
    // Each runner's command, its settings, and the row it is compared with: one process
    // with the same sync policy.
    struct Runner {
      std::string name, command;
      std::vector<std::string> sets;
      std::size_t baseline;
    };
    const std::vector<std::string> elastic{"plan.sync=elastic", "plan.options.elastic.asynchronous=true"};
    const std::vector<Runner> commands{
        {"actorpipe run (one process)", "run", {}, 0},
        {"actorpipe launch --nprocs 2", "launch --nprocs 2", {}, 0},
        {"actorpipe launch --nprocs 2 --bind none", "launch --nprocs 2 --bind none", {}, 0},
        {"actorpipe launch --nprocs 4", "launch --nprocs 4", {}, 0},
        {"actorpipe run, sync sdpipe", "run", {"plan.sync=sdpipe"}, 4},
        {"actorpipe launch --nprocs 2, sync sdpipe", "launch --nprocs 2", {"plan.sync=sdpipe"}, 4},
        {"actorpipe run, asynchronous elastic", "run", elastic, 6},
        {"actorpipe launch --nprocs 2, asynchronous elastic", "launch --nprocs 2", elastic, 6},
        {"actorpipe run, parameter server", "run", {"plan.sync=parameter-server"}, 8},
        {"actorpipe launch --nprocs 2, parameter server", "launch --nprocs 2", {"plan.sync=parameter-server"}, 8}};
    std::vector<std::vector<Rate>> measured(commands.size());
    std::vector<std::vector<double>> ratios(commands.size()); // against the baseline, same round
    for (std::uint64_t round = 0; round < rounds; ++round)
      for (std::size_t c = 0; c < commands.size(); ++c) {
        const Runner& r = commands[c];
        measured[c].push_back(rate_of(cli.run(default_job, r.sets, steps, "", r.command).step_ms, batch));
        ratios[c].push_back(measured[c].back().samples_per_s / measured[r.baseline].back().samples_per_s);
      }
    text::Table table({{"runner"},
                       {"samples/s", text::Table::Align::right},
                       {"step ms", text::Table::Align::right},
                       {"vs one process, same sync", text::Table::Align::right},
                       {"per round, least to most", text::Table::Align::right}});
    for (std::size_t c = 0; c < commands.size(); ++c) {
      const Rate rate = *median_round(measured[c]);
      const auto [least, most] = std::minmax_element(ratios[c].begin(), ratios[c].end());
      table.add_row({commands[c].name, text::format_fixed(rate.samples_per_s, 0), text::format_fixed(rate.step_ms, 2),
                     ratio(median(ratios[c]), 1.0), ratio(*least, 1.0) + " – " + ratio(*most, 1.0)});
    }
    std::cout << "\nprocesses: the default job as it is, batch " << batch << ", " << cores << " cores; " << steps
              << " timed steps after " << warmup_steps << "; the median of " << rounds
              << " interleaved rounds (the ratio: the median of each round's)\n\n"
              << table.str();
  }
  if (wanted("hops")) {
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
      for (int k = 1; k < 3; ++k)
        best = std::min(best, os_handoff_us(sender_computes, core));
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
                  text::format_fixed(eight_stages.step_ms * 1000.0, 1), text::format_fixed(hop_us, 1),
                  latencies(latency), above(latency, bound ? one_core_floor : floor)});
    if (bound)
      hops.add_row({"8 stages, --no-pin", text::format_fixed(eight_unbound.step_ms * 1000.0, 1),
                    text::format_fixed(unbound_hop_us, 1), latencies(unbound_latency), above(unbound_latency, floor)});
    hops.add_row({"OS hand-off, threads on one core (a switch)", "", "", latencies(one_core_floor), ""});
    hops.add_row({"OS hand-off, threads placed by the OS", "", "", latencies(floor), ""});
    std::cout << "\nper hop: tiny MLP, 1 micro-batch of 4 samples, gpipe; end to end = (8-stage step − 1-stage step) / "
                 "14 hops;\n"
                 "latency = a stage's compute end to its neighbour's compute start, from the 8-stage trace; the OS\n"
                 "hand-off passes a pointer to a thread blocked on a condition variable while the sender blocks\n"
                 "(as after a forward send) / computes on (as after a backward send); on one core it is the switch to\n"
                 "the receiver as the sender blocks, the least a hand-off there costs\n\n"
              << hops.str();
  }
  if (wanted("prediction")) {
    // Prediction error per schedule, one device per core, and for the default job as it
    // is, whose stage actors may share the cores, with its CNN and with the other
    // built-in models and two TorchScript ones (tests/fixtures). Every run lies between
    // two profiles of its model, measured just before and just after it, and is held
    // against the mean of the predictions `actorpipe run` makes from them: a shared
    // machine's speed drifts over the seconds of a round, and so it weighs on a
    // prediction and the measurement it is held against alike.
    std::cerr << "prediction: the default job per schedule and per model between profiles, per round\n";
    text::Table prediction({{"model"},
                            {"schedule"},
                            {"shape"},
                            {"measured ms", text::Table::Align::right},
                            {"predicted ms", text::Table::Align::right},
                            {"error (median)", text::Table::Align::right},
                            {"error per round", text::Table::Align::right}});
    const std::string pipelines = std::to_string(std::max(1u, cores / 2));
    struct Case {
      std::string model, schedule, shape;
      std::vector<std::string> model_sets, sets;
      std::vector<double> measured, predicted, error;
    };
    std::vector<Case> cases;
    for (const char* scheduler : {"gpipe", "1f1b", "sliced-1f1b"})
      cases.push_back(
          {"cnn",
           scheduler,
           std::to_string(job.plan.stages) + " × " + pipelines + ", 4 micro-batches",
           {},
           {"plan.scheduler=\"" + std::string(scheduler) + "\"", "plan.pipelines=" + pipelines, "plan.micro_batches=4"},
           {},
           {},
           {}});
    const std::size_t default_actors = job.plan.stages * job.plan.pipelines;
    const std::string default_shape = std::to_string(job.plan.stages) + " × " + std::to_string(job.plan.pipelines) +
                                      ", " + std::to_string(job.plan.micro_batches) +
                                      " micro-batches (the default job" +
                                      (default_actors > cores ? ", on shared cores)" : ")");
    const std::string fixtures = fs::canonical(root).string() + "/tests/fixtures/";
    const std::vector<std::pair<std::string, std::vector<std::string>>> models = {
        {"cnn", {}},
        {"mlp", {"model.zoo=\"mlp\""}},
        {"gpt (text: README.md)",
         {"model.zoo=\"gpt\"", "data.dataset=\"text\"",
          "data.path=\"" + fs::canonical(root).string() + "/README.md\""}},
        {"conv-mlp.pt (TorchScript)", {"model.zoo=\"torchscript\"", "model.file=\"" + fixtures + "conv-mlp.pt\""}},
        {"lenet-bn.pt (TorchScript, BatchNorm, Dropout)",
         {"model.zoo=\"torchscript\"", "model.file=\"" + fixtures + "lenet-bn.pt\""}}};
    for (const auto& [model, sets] : models)
      cases.push_back({model, job.plan.scheduler, default_shape, sets, sets, {}, {}, {}});
    for (std::uint64_t round = 0; round < rounds; ++round) {
      for (Case& c : cases) {
        cli.measure_profile(default_job, c.model_sets);
        const Cli::Outcome o = cli.run(default_job, c.sets, steps); // predicted from the profile before
        cli.measure_profile(default_job, c.model_sets);
        const double predicted = (o.predicted_ms + cli.predict(default_job, c.sets)) / 2;
        const double measured = rate_of(o.step_ms, batch).step_ms;
        c.measured.push_back(measured);
        c.predicted.push_back(predicted);
        c.error.push_back((predicted - measured) / measured);
      }
    }
    auto percent = [](double error) { return (error >= 0 ? "+" : "") + text::format_fixed(100.0 * error, 1) + "%"; };
    for (const Case& c : cases) {
      std::string each;
      for (double e : c.error)
        each += (each.empty() ? "" : " ") + percent(e);
      prediction.add_row({c.model, c.schedule, c.shape, text::format_fixed(median(c.measured), 2),
                          text::format_fixed(median(c.predicted), 2), percent(median(c.error)), each});
    }
    std::cout << "\nprediction: the simulator's iteration time as `actorpipe run` predicts it (on shared cores, with\n"
                 "neighbours taking turns), the mean of its predictions from profiles measured just before and just\n"
                 "after each run (`actorpipe profile`, the other cores busy), against the run's median step\n\n"
              << prediction.str();
  }
  fs::remove_all(scratch);
  return 0;
}
