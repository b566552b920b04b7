/// Planner grid: autopipe + hetero against the best of every other partitioner with every mapper,
/// by the predicted iteration time of the whole plan (what `actorpipe plan` prints).
///
/// Two grids, kept apart: the planner is tuned on the first. Of the second, seeds 1 to
/// 24 (the default) are never tuned on; seeds 25 to 64, and the cases of later seeds
/// that docs/simulate.md names (83, 86), have guided changes.
///   - tuned (the default): every model (the six PipeDream profiles, gpt2-xl, bert-large
///     and a 1,000-block chain) × every shipped cluster of up to 10,000 devices (the
///     100,000-device one is for scale_bench and simulator_bench) × 4, 8 and 16 stages with as
///     many pipelines as the cluster holds (8 micro-batches each), and `auto` (stages,
///     pipelines and micro-batches searched by the planner, the batch fixed per
///     cluster; not on clusters of more than 1,000 devices, where every baseline's
///     shape search takes hours);
///   - held-out (--held-out [SEEDS]): per seed (24 unless given), a model drawn from it
///     (a chain of 50 to 2,000 blocks, or every third seed a graph with branches;
///     generated_cases.hpp) on a cluster drawn from it (odd seeds) or the shipped
///     clusters in turn (even seeds), at two stage counts drawn from 2 to 64 and
///     1, 8, 32 and 128 micro-batches.
/// Each pipeline trains the profile's batch per iteration. A cell lists autopipe +
/// hetero's predicted iteration time, the best other pair's, their ratio (> 1: autopipe
/// faster), the planners' search times and the slowest other pair's search time over
/// autopipe + hetero's; then those ratios' minimum, median and maximum over all cells,
/// over the heterogeneous clusters' cells and over the `auto` cells; and, on the tuned
/// grid, the partitioners' own search time at 32 stages and 1, 8, 32 and 128
/// micro-batches.
///   build/bench/planner_grid [SOURCE_ROOT] [--model NAME] [--cluster NAME] [--stages N|auto]
///                            [--micro-batches M] [--cells] [--held-out [SEEDS]] [--search]
/// --stages N plans N stages alone (any N); --micro-batches M gives each pipeline M
/// micro-batches instead of 8 (on the tuned grid); --search prints only the search
/// times at 32 stages, which --cluster and --stages leave out.

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/schedule_builders.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"
#include "call_timing.hpp"
#include "generated_cases.hpp"
#include "synthetic_chain.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

using namespace actorpipe;

namespace {

struct Arguments {
  std::string root = ".";
  std::string model, cluster, stages;
  std::uint32_t micro_batches = 8;
  bool cells = false;       ///< print every cell, not only the summary and the lost ones
  bool search_only = false; ///< --search: only the partitioners' own search at 32 stages
  std::size_t held_out = 0; ///< seeds of the held-out grid; 0: the tuned grid
};

Arguments parse(int argc, char** argv) {
  Arguments a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--model")
      a.model = value();
    else if (arg == "--cluster")
      a.cluster = value();
    else if (arg == "--stages")
      a.stages = value();
    else if (arg == "--micro-batches")
      a.micro_batches = static_cast<std::uint32_t>(std::stoul(value()));
    else if (arg == "--cells")
      a.cells = true;
    else if (arg == "--search")
      a.search_only = true;
    else if (arg == "--held-out")
      a.held_out = i + 1 < argc && std::isdigit(static_cast<unsigned char>(argv[i + 1][0])) ? std::stoul(value()) : 24;
    else
      a.root = arg;
  }
  return a;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string summary(const std::vector<double>& v) {
  if (v.empty()) return "none";
  return "min " + text::format_fixed(*std::min_element(v.begin(), v.end()), 3) + "×, median " +
         text::format_fixed(median(v), 3) + "×, max " + text::format_fixed(*std::max_element(v.begin(), v.end()), 3) +
         "× over " + std::to_string(v.size()) + " cells";
}

bool heterogeneous(const ClusterSpec& cluster) {
  return std::any_of(cluster.devices.begin(), cluster.devices.end(),
                     [&](const Device& d) { return d.speed != cluster.devices.front().speed; });
}

struct Outcome {
  bool ok = false;
  double iteration_ms = 0, search_ms = 0;
  std::string shape, error;
};

Outcome plan_one(JobSpec job, const PluginRegistry& plugins, const std::string& partitioner,
                 const std::string& mapper) {
  job.plan.partitioner = partitioner;
  job.plan.mapper = mapper;
  auto plan = make_plan(job, plugins);
  if (!plan) return {false, 0, 0, "", plan.error().message};
  return {true, plan->iteration_time_ms, plan->search_ms,
          std::to_string(plan->pipelines) + "×" + std::to_string(plan->stages.size()) + "×" +
              std::to_string(plan->schedule.micro_batch_sizes.size()),
          ""};
}

/// A job of `stages` stages, as many pipelines as the cluster holds, each training the
/// profile's batch in `micro_batches` micro-batches; none where it does not fit.
std::optional<JobSpec> fixed_job(const ModelProfile& model, const ClusterSpec& cluster, std::uint32_t stages,
                                 std::uint32_t micro_batches) {
  const auto pipelines = static_cast<std::uint32_t>(cluster.devices.size() / stages);
  if (pipelines == 0 || stages > model.units(true).size()) return std::nullopt;
  JobSpec job;
  job.file = "planner_grid";
  job.job.name = model.name + "@" + cluster.name;
  job.profile = model;
  job.cluster = cluster;
  job.plan.stages = stages;
  job.plan.pipelines = pipelines;
  job.plan.micro_batches = micro_batches;
  job.train.batch_size = pipelines * micro_batches * std::max<std::uint32_t>(1, model.batch_size / micro_batches);
  return job;
}

/// Cells planned with autopipe + hetero and with every other pair, and what they show.
class Grid {
public:
  Grid(const PluginRegistry& registry, bool every_cell) : registry_(registry), every_cell_(every_cell) {
    for (const PluginRecord& record : registry.plugins()) {
      if (record.kind == PluginKind::partitioner) partitioners_.push_back(record.name);
      if (record.kind == PluginKind::mapper) mappers_.push_back(record.name);
    }
  }

  /// Plans `job`; `column` names its stages (or `auto`) in the table.
  void run(const JobSpec& job, const std::string& column) {
    const Outcome ours = plan_one(job, registry_, "autopipe", "hetero");

    Outcome best;
    std::string best_name;
    double others_search = 0;
    for (const std::string& p : partitioners_)
      for (const std::string& m : mappers_) {
        if (p == "autopipe") continue; // the baselines, each with every mapper
        const Outcome o = plan_one(job, registry_, p, m);
        if (!o.ok) continue;
        others_search = std::max(others_search, o.search_ms);
        if (!best.ok || o.iteration_ms < best.iteration_ms) best = o, best_name = p + "+" + m;
      }
    if (!ours.ok && !best.ok) return; // nothing fits this cell
    if (!ours.ok) {
      std::cout << "autopipe+hetero failed on " << job.profile.name << " × " << job.cluster.name << " × " << column
                << ": " << ours.error << "\n";
      ++lost_;
      return;
    }
    if (!best.ok) return;
    const double ratio = best.iteration_ms / ours.iteration_ms;
    const double search_ratio = others_search / std::max(ours.search_ms, 1e-3);
    ++counted_;
    (column == "auto" ? automatic_ : all_).push_back(ratio);
    if (column != "auto" && heterogeneous(job.cluster)) hetero_.push_back(ratio);
    search_.push_back(search_ratio);
    const bool behind = ratio < 1 - 0.005;
    lost_ += behind;
    if (every_cell_ || behind)
      cells_.add_row({job.profile.name, job.cluster.name, column, ours.shape, text::format_fixed(ours.iteration_ms, 2),
                      best_name + " " + best.shape, text::format_fixed(best.iteration_ms, 2),
                      text::format_fixed(ratio, 3) + (behind ? " LOST" : ""), text::format_fixed(ours.search_ms, 2),
                      text::format_fixed(others_search, 2), text::format_fixed(search_ratio, 2) + "×"});
    // A count that rewrites itself on a terminal; a line now and then in a log.
    if (terminal_)
      std::cerr << "\r" << counted_ << " cells" << std::flush;
    else if (counted_ % 25 == 0)
      std::cerr << counted_ << " cells\n";
  }

  void print(const std::string& title) const {
    if (terminal_) std::cerr << "\r";
    std::cout << title
              << ": predicted iteration time, best other partitioner+mapper / autopipe+hetero (> 1: "
                 "autopipe faster)\n\n";
    if (!cells_.empty()) std::cout << cells_.str() << "\n";
    std::cout << "fixed stages     " << summary(all_) << "\n"
              << "  heterogeneous  " << summary(hetero_) << "\n"
              << "auto shapes      " << summary(automatic_) << "\n"
              << "search, slowest other / autopipe+hetero  " << summary(search_) << "\n"
              << "cells lost (autopipe+hetero > 0.5% slower, or failed): " << lost_ << "\n";
  }

  std::size_t lost() const { return lost_; }

private:
  const PluginRegistry& registry_;
  bool every_cell_;
  std::vector<std::string> partitioners_, mappers_;
  text::Table cells_{{{"model"},
                      {"cluster"},
                      {"stages"},
                      {"autopipe+hetero"},
                      {"ms", text::Table::Align::right},
                      {"best other"},
                      {"ms", text::Table::Align::right},
                      {"ratio", text::Table::Align::right},
                      {"search ms", text::Table::Align::right},
                      {"others' search ms", text::Table::Align::right},
                      {"search ratio", text::Table::Align::right}}};
  std::vector<double> all_, hetero_, automatic_, search_;
  bool terminal_ = ::isatty(STDERR_FILENO) != 0;
  std::size_t lost_ = 0, counted_ = 0;
};

/// The held-out grid: models and clusters drawn from seeds 1 … `seeds`.
int held_out(const Arguments& args, const PluginRegistry& registry, const std::vector<ClusterSpec>& shipped) {
  Grid grid(registry, args.cells);
  std::size_t next_shipped = 0;
  for (std::uint64_t seed = 1; seed <= args.held_out; ++seed) {
    std::mt19937_64 random(seed);
    const auto size = static_cast<std::size_t>(
        std::exp(std::uniform_real_distribution<double>(std::log(50.0), std::log(2000.0))(random)));
    const ModelProfile model = seed % 3 == 0 ? bench::generated_graph(seed, size) : bench::generated_chain(seed, size);
    const ClusterSpec cluster =
        seed % 2 ? bench::generated_cluster(seed, 64) : shipped[next_shipped++ % shipped.size()];
    if (!args.model.empty() && model.name != args.model) continue;
    if (!args.cluster.empty() && cluster.name != args.cluster) continue;
    std::vector<std::uint32_t> counts;
    for (std::uint32_t stages = 2; stages <= 64 && stages <= cluster.devices.size() && stages <= size; stages *= 2)
      counts.push_back(stages);
    std::shuffle(counts.begin(), counts.end(), random);
    counts.resize(std::min<std::size_t>(counts.size(), 2));
    for (const std::uint32_t stages : counts)
      for (const std::uint32_t micro_batches : {1u, 8u, 32u, 128u})
        if (const auto job = fixed_job(model, cluster, stages, micro_batches))
          grid.run(*job, std::to_string(stages) + " × " + std::to_string(micro_batches));
  }
  grid.print("held-out grid (" + std::to_string(args.held_out) + " seeds; 1 to 24 never tuned on)");
  return grid.lost() == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  if (!registry) return std::cerr << "planner_grid: " << registry.error().message << "\n", 2;

  std::vector<ClusterSpec> clusters;
  std::set<std::filesystem::path> cluster_files;
  if (!std::filesystem::is_directory(args.root + "/configs/clusters"))
    return std::cerr << "planner_grid: " << args.root << "/configs/clusters: not a folder (pass the source folder)\n",
           2;
  for (const auto& entry : std::filesystem::directory_iterator(args.root + "/configs/clusters"))
    if (entry.path().extension() == ".toml") cluster_files.insert(entry.path());
  // Clusters made for planning and simulating at scale (datacenter-100k) stay out of
  // both grids: every baseline pair there takes minutes a cell, and a held-out seed
  // keeps the shipped cluster it has always drawn. scale_bench and simulator_bench
  // time them instead.
  constexpr std::size_t max_grid_devices = 10000;
  std::vector<std::string> left_out;
  for (const auto& path : cluster_files) {
    auto cluster = load_cluster(path.string());
    if (!cluster) return std::cerr << "planner_grid: " << cluster.error().message << "\n", 2;
    if (cluster->devices.size() > max_grid_devices)
      left_out.push_back(cluster->name);
    else
      clusters.push_back(std::move(*cluster));
  }
  for (const std::string& name : left_out)
    std::cout << "cluster " << name << " left out (more than " << max_grid_devices << " devices)\n";
  if (args.held_out > 0) return held_out(args, *registry, clusters);

  std::vector<ModelProfile> models;
  for (const char* name : {"alexnet", "densenet121", "gnmt", "resnet101", "resnet50", "vgg16"}) {
    ProfileImportOptions options;
    options.batch_size = 128; // as the shipped jobs read them
    auto profile = load_profile(args.root + "/configs/profiles/pipedream/" + name + ".txt", options);
    if (!profile) return std::cerr << "planner_grid: " << profile.error().message << " (pass the source folder)\n", 2;
    models.push_back(std::move(*profile));
  }
  for (const char* name : {"gpt2-xl", "bert-large"}) {
    auto profile = load_profile(args.root + "/configs/profiles/" + name + ".toml");
    if (!profile) return std::cerr << "planner_grid: " << profile.error().message << "\n", 2;
    models.push_back(std::move(*profile));
  }
  models.push_back(bench::synthetic_chain(1000));

  Grid grid(*registry, args.cells);
  constexpr std::size_t max_auto_devices = 1000;
  std::set<std::string> skipped_auto;
  const std::vector<std::string> stage_columns =
      args.stages.empty() ? std::vector<std::string>{"4", "8", "16", "auto"} : std::vector<std::string>{args.stages};
  for (const ModelProfile& model : models) {
    if (args.search_only || (!args.model.empty() && model.name != args.model)) continue;
    for (const ClusterSpec& cluster : clusters) {
      if (!args.cluster.empty() && cluster.name != args.cluster) continue;
      for (const std::string& column : stage_columns) {
        if (column != "auto") {
          if (const auto job =
                  fixed_job(model, cluster, static_cast<std::uint32_t>(std::stoul(column)), args.micro_batches))
            grid.run(*job, column);
          continue;
        }
        // Searching shapes over thousands of devices with every baseline takes hours.
        if (cluster.devices.size() > max_auto_devices) {
          skipped_auto.insert(cluster.name);
          continue;
        }
        JobSpec job;
        job.file = "planner_grid";
        job.job.name = model.name + "@" + cluster.name;
        job.profile = model;
        job.cluster = cluster;
        // A batch of one pipeline's share per 8 devices (at least one share).
        const auto shares = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(cluster.devices.size() / 8));
        job.train.batch_size =
            shares * args.micro_batches * std::max<std::uint32_t>(1, model.batch_size / args.micro_batches);
        grid.run(job, column);
      }
    }
  }
  if (!args.search_only) grid.print("tuned grid");
  for (const std::string& name : skipped_auto)
    std::cout << "auto shapes not searched on " << name << " (more than " << max_auto_devices << " devices)\n";
  std::cout << "\n";
  const std::size_t lost = grid.lost();

  // The partitioners' own search at 32 stages, one pipeline on the first 32 devices of
  // homo-64, as the planner's later rounds call them.
  const auto homo =
      std::find_if(clusters.begin(), clusters.end(), [](const ClusterSpec& c) { return c.name == "homo-64"; });
  if (homo == clusters.end() || !args.cluster.empty() || !args.stages.empty()) return lost == 0 ? 0 : 1;
  text::Table search({{"model"},
                      {"blocks", text::Table::Align::right},
                      {"micro-batches", text::Table::Align::right},
                      {"autopipe ms", text::Table::Align::right},
                      {"dapple ms", text::Table::Align::right},
                      {"piper ms", text::Table::Align::right},
                      {"dapple / autopipe", text::Table::Align::right},
                      {"piper / autopipe", text::Table::Align::right}});
  std::vector<double> dapple_ratios, piper_ratios, growth_32, growth_128; ///< growth: autopipe's, against 8
  for (const ModelProfile& model : models) {
    if (!args.model.empty() && model.name != args.model) continue;
    constexpr std::size_t stages = 32;
    if (model.blocks.size() < stages) continue;
    double at_8 = 0;
    for (const std::size_t micro_batches : {1, 8, 32, 128}) {
      PlanContext context{.profile = model, .cluster = *homo};
      context.stages = stages;
      context.micro_batch_sizes = std::vector<std::uint32_t>(
          micro_batches, std::max<std::uint32_t>(1, model.batch_size / static_cast<std::uint32_t>(micro_batches)));
      context.batch_size = static_cast<std::uint32_t>(micro_batches) * context.micro_batch_sizes.front();
      context.scheduler = "1f1b";
      context.action_overhead_ms = 0.1;
      context.placement.emplace_back();
      for (std::size_t s = 0; s < stages; ++s)
        context.placement[0].push_back(s);
      context.stage_speeds.assign(stages, 1.0);
      context.stage_memory.assign(stages, homo->devices.front().memory_bytes);
      std::map<std::string, double> ms;
      for (const char* name : {"autopipe", "dapple", "piper"})
        ms[name] = bench::median_call_ms([&, p = *registry->partitioner(name)] { return p->partition(context).ok(); });
      if (micro_batches == 8) at_8 = ms["autopipe"];
      if (micro_batches == 32) growth_32.push_back(ms["autopipe"] / at_8);
      if (micro_batches == 128) growth_128.push_back(ms["autopipe"] / at_8);
      dapple_ratios.push_back(ms["dapple"] / ms["autopipe"]);
      piper_ratios.push_back(ms["piper"] / ms["autopipe"]);
      search.add_row({model.name, std::to_string(model.blocks.size()), std::to_string(micro_batches),
                      text::format_fixed(ms["autopipe"], 3), text::format_fixed(ms["dapple"], 3),
                      text::format_fixed(ms["piper"], 3), text::format_fixed(dapple_ratios.back(), 1) + "×",
                      text::format_fixed(piper_ratios.back(), 1) + "×"});
    }
  }
  std::cout << "search at 32 stages (one partition call, median of 5 batches of ≥ 1 ms; one pipeline on the first 32 "
               "devices of homo-64, the profile's batch in 1 to 128 micro-batches)\n\n"
            << search.str() << "\n"
            << "dapple / autopipe  " << summary(dapple_ratios) << "\n"
            << "piper / autopipe   " << summary(piper_ratios) << "\n"
            << "autopipe's search at 32 micro-batches / at 8   " << summary(growth_32) << "\n"
            << "autopipe's search at 128 micro-batches / at 8  " << summary(growth_128) << "\n";
  return lost == 0 ? 0 : 1;
}
