/// Simulator benchmark: wall time and peak memory to simulate 100 iterations of 1F1B
/// (8 stages, 8 micro-batches, BERT-Large) on 64, 1,000 and 10,000 devices of the
/// 10,000-device cluster and on 100,000 devices of ten times its servers, with and
/// without random stragglers. Ratios are per device-iteration against the 64-device run.
/// Without stragglers most iterations repeat the one before and are not simulated
/// again ('repeated'; docs/simulate.md); with them every iteration is.
/// Peak memory is the process's (getrusage), so a row shows the most of it and those
/// above.
///   build/bench/simulator_bench [SOURCE_ROOT]

#include <actorpipe/job.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"

#include <chrono>
#include <iostream>

#include <sys/resource.h>

using namespace actorpipe;

namespace {

/// The process's peak resident memory so far, in MB.
long peak_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

} // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  auto cluster = load_cluster(root + "/configs/clusters/datacenter-10k.toml");
  auto large = load_cluster(root + "/configs/clusters/datacenter-100k.toml");
  auto profile = load_profile(root + "/configs/profiles/bert-large.toml");
  if (!cluster || !large || !profile) {
    std::cerr << "simulator_bench: "
              << (!cluster ? cluster.error().message
                  : !large ? large.error().message
                           : profile.error().message)
              << " (run from the source folder, or pass it)\n";
    return 2;
  }
  constexpr std::size_t stages = 8, micro_batches = 8, iterations = 100;
  // Eight stages of three layers each (the embedding and head with the first and last).
  std::vector<Cut> cuts{{0, 0}};
  for (std::size_t s = 1; s < stages; ++s)
    cuts.push_back({1 + 3 * s, 0});
  cuts.push_back({profile->blocks.size(), 0});

  text::Table table({{"devices", text::Table::Align::right},
                     {"stragglers"},
                     {"iterations", text::Table::Align::right},
                     {"repeated", text::Table::Align::right},
                     {"events", text::Table::Align::right},
                     {"wall s", text::Table::Align::right},
                     {"µs per device-iteration", text::Table::Align::right},
                     {"peak MB", text::Table::Align::right},
                     {"vs 64 devices", text::Table::Align::right}});
  double baseline = 0;
  for (std::size_t devices : {64, 1000, 10000, 100000}) {
    const ClusterSpec& on = devices > cluster->devices.size() ? *large : *cluster;
    for (const char* stragglers : {"", "delay:p=0.01,ms=5"}) {
      Plan plan;
      plan.pipelines = devices / stages;
      for (std::size_t s = 0; s < stages; ++s)
        plan.stages.push_back({cuts[s], cuts[s + 1], {}});
      for (std::size_t p = 0; p < plan.pipelines; ++p) {
        plan.devices.emplace_back();
        for (std::size_t s = 0; s < stages; ++s)
          plan.devices.back().push_back(p * stages + s);
      }
      plan.batch_size = static_cast<std::uint32_t>(plan.pipelines * micro_batches * 4);
      plan.schedule = one_f_one_b_schedule(stages, std::vector<std::uint32_t>(micro_batches, 4));
      SimulationOptions options;
      options.iterations = iterations;
      options.action_overhead_ms = 0.1;
      options.optimizer_factor = 3;
      options.stragglers = *parse_stragglers(stragglers, on);
      const auto start = std::chrono::steady_clock::now();
      auto report = simulate(plan, *profile, on, options);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!report) return std::cerr << "simulator_bench: " << report.error().message << "\n", 1;
      const double per = wall * 1e6 / static_cast<double>(plan.pipelines * stages * iterations);
      if (baseline == 0) baseline = per;
      table.add_row({std::to_string(plan.pipelines * stages), *stragglers ? stragglers : "none",
                     std::to_string(iterations), std::to_string(report->repeated_iterations),
                     std::to_string(report->events), text::format_fixed(wall, 3), text::format_fixed(per, 3),
                     std::to_string(peak_mb()), text::format_fixed(per / baseline, 2) + "×"});
    }
  }
  std::cout << "simulator: 100 iterations of 1F1B, 8 stages × 8 micro-batches of BERT-Large per pipeline\n\n"
            << table.str();
  return 0;
}
