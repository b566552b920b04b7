/// Planning at scale: each partitioner's search for a long synthetic chain (100,000
/// blocks by default) at 16 stages on homo-64, one timed call each, with its goal and
/// the ratio to autopipe's time. Searches that report progress print it as they go.
///   build/bench/scale_bench [SOURCE_ROOT [BLOCKS [STAGES [PARTITIONER]]]]   (PARTITIONER: only its row)

#include <actorpipe/job.hpp>
#include <actorpipe/plugin_registry.hpp>

#include "synthetic_chain.hpp"
#include "base/text.hpp"
#include "base/text_table.hpp"

#include <chrono>
#include <iostream>
#include <map>

using namespace actorpipe;

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::size_t blocks = argc > 2 ? std::stoul(argv[2]) : 100000;
  const std::size_t stages = argc > 3 ? std::stoul(argv[3]) : 16;
  const std::string only = argc > 4 ? argv[4] : "";
  auto cluster = load_cluster(root + "/configs/clusters/homo-64.toml");
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  if (!cluster || !registry) {
    std::cerr << "scale_bench: " << (!cluster ? cluster.error().message : registry.error().message)
              << " (run from the source folder, or pass it)\n";
    return 2;
  }
  const ModelProfile model = bench::synthetic_chain(blocks);
  /// What each search should take on 100,000 blocks at 16 stages, in seconds: the
  /// fast partitioners well under a second, the exact programmes within a minute.
  const std::map<std::string, double> goal_s = {{"autopipe", 0.3}, {"pipedream", 1}, {"dapple", 60}, {"piper", 60}};

  text::Table table({{"partitioner"},
                     {"search s", text::Table::Align::right},
                     {"goal s", text::Table::Align::right},
                     {"vs autopipe", text::Table::Align::right}});
  double autopipe_s = 0;
  for (const std::string name : {"autopipe", "pipedream", "dapple", "piper", "uniform"}) {
    if (!only.empty() && name != only) continue;
    auto partitioner = registry->partitioner(name);
    if (!partitioner) return std::cerr << "scale_bench: " << partitioner.error().message << "\n", 2;
    PlanContext context{.profile = model, .cluster = *cluster};
    context.stages = stages;
    context.micro_batch_sizes = std::vector<std::uint32_t>(2 * stages, model.batch_size);
    context.batch_size = static_cast<std::uint32_t>(2 * stages * model.batch_size);
    context.scheduler = "1f1b";
    context.action_overhead_ms = 0.1;
    int shown = -1;
    context.progress = [&](double fraction) {
      const int percent = static_cast<int>(fraction * 100);
      if (percent / 10 == shown / 10) return;
      shown = percent;
      std::cerr << "\r" << name << " " << percent << "%" << std::flush;
    };
    const auto start = std::chrono::steady_clock::now();
    auto partition = (*partitioner)->partition(context);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (shown >= 0) std::cerr << "\r" << name << " done\n";
    if (!partition) return std::cerr << "scale_bench: " << name << ": " << partition.error().message << "\n", 1;
    if (name == "autopipe") autopipe_s = s;
    const auto goal = goal_s.find(name);
    table.add_row({name, text::format_fixed(s, 3), goal == goal_s.end() ? "" : text::format_fixed(goal->second, 1),
                   autopipe_s > 0 ? text::format_fixed(s / autopipe_s, 1) + "×" : ""});
  }
  std::cout << "planning a " << blocks << "-block chain at " << stages << " stages on homo-64 (one call each)\n\n"
            << table.str();
  return 0;
}
