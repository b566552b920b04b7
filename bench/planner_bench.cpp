/// Planner benchmark: for each model × stage count × partitioner, the partitioner's
/// search time (median of 5 timed batches), its balance (slowest stage / mean, by compute) and
/// the predicted iteration time of one pipeline under 1F1B with 2S micro-batches on
/// the homogeneous 64-device cluster. Ratios are against autopipe in the same run;
/// 'vs exact' is the balance against the exact min-max split of the units (sub-blocks
/// where the model has them), from the dynamic programme.
///   build/bench/planner_bench [SOURCE_ROOT [MODEL [STAGES]]]   (MODEL, STAGES: only those rows)

#include <actorpipe/job.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include "common/partitioning/split_programme.hpp"
#include "call_timing.hpp"
#include "synthetic_chain.hpp"
#include "base/text.hpp"
#include "base/text_table.hpp"

#include <algorithm>
#include <iostream>
#include <map>

using namespace actorpipe;

namespace {

/// The balance of the exact min-max split into `stages` at sub-block granularity.
double exact_balance(const ModelProfile& model, std::size_t stages) {
  const partitioning::UnitCosts costs(model, true, model.batch_size);
  const std::vector<std::size_t> b = partitioning::min_max_split(
      stages, costs.size(), [&](std::size_t, std::size_t i, std::size_t j) { return costs.compute_ms(i, j); });
  double largest = 0;
  for (std::size_t s = 0; s < stages; ++s)
    largest = std::max(largest, costs.compute_ms(b[s], b[s + 1]));
  return largest / (costs.compute_ms(0, costs.size()) / static_cast<double>(stages));
}

struct Row {
  double search_ms = 0, balance = 0, iteration_ms = 0;
  bool ok = false;
};

Row measure(Partitioner& partitioner, const ModelProfile& profile, const ClusterSpec& cluster, std::size_t stages) {
  PlanContext context{.profile = profile, .cluster = cluster};
  context.stages = stages;
  context.micro_batch_sizes = std::vector<std::uint32_t>(2 * stages, profile.batch_size);
  context.batch_size = static_cast<std::uint32_t>(2 * stages * profile.batch_size);
  context.scheduler = "1f1b";
  context.action_overhead_ms = 0.1;
  Result<Partition> partition = partitioner.partition(context);
  if (!partition) return {};
  const double search_ms = bench::median_call_ms([&] {
    partition = partitioner.partition(context);
    return partition.ok();
  });
  Row row;
  row.ok = true;
  row.search_ms = search_ms;

  Plan plan;
  plan.pipelines = 1;
  for (std::size_t s = 0; s < stages; ++s)
    plan.stages.push_back({partition->cuts[s], partition->cuts[s + 1], {}});
  plan.devices.emplace_back();
  for (std::size_t s = 0; s < stages; ++s)
    plan.devices[0].push_back(s);
  plan.batch_size = context.batch_size;
  plan.schedule = one_f_one_b_schedule(stages, context.micro_batch_sizes);
  SimulationOptions options;
  options.action_overhead_ms = 0.1;
  auto report = simulate(plan, profile, cluster, options);
  if (!report) return {};
  row.iteration_ms = report->iteration_time_ms;
  // Balance by the profile's compute, as the exact split is measured, without the
  // simulator's per-action overhead.
  double largest = 0, total = 0;
  std::size_t s = 0;
  double stage = 0;
  for (const Unit& u : profile.units(true)) {
    while (!(u.begin < partition->cuts[s + 1]))
      largest = std::max(largest, stage), stage = 0, ++s;
    stage += u.forward_ms + u.backward_ms;
    total += u.forward_ms + u.backward_ms;
  }
  largest = std::max(largest, stage);
  row.balance = largest / (total / static_cast<double>(stages));
  return row;
}

} // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::string only_model = argc > 2 ? argv[2] : "";
  const std::size_t only_stages = argc > 3 ? std::stoul(argv[3]) : 0;
  auto cluster = load_cluster(root + "/configs/clusters/homo-64.toml");
  auto registry = PluginRegistry::discover(PluginRegistry::default_folders());
  if (!cluster || !registry) {
    std::cerr << "planner_bench: " << (!cluster ? cluster.error().message : registry.error().message)
              << " (run from the source folder, or pass it)\n";
    return 2;
  }
  std::vector<ModelProfile> models;
  for (const char* name : {"vgg16", "resnet50", "gnmt"}) {
    ProfileImportOptions options;
    options.batch_size = 128;
    auto profile = load_profile(root + "/configs/profiles/pipedream/" + name + ".txt", options);
    if (!profile) return std::cerr << "planner_bench: " << profile.error().message << "\n", 2;
    models.push_back(std::move(*profile));
  }
  for (const char* name : {"bert-large", "gpt2-xl"}) {
    auto profile = load_profile(root + "/configs/profiles/" + name + ".toml");
    if (!profile) return std::cerr << "planner_bench: " << profile.error().message << "\n", 2;
    models.push_back(std::move(*profile));
  }
  models.push_back(bench::synthetic_chain(1000));

  const std::vector<std::string> partitioners = {"autopipe", "dapple", "piper", "pipedream", "uniform"};
  std::map<std::string, std::shared_ptr<Partitioner>> loaded;
  for (const auto& name : partitioners)
    loaded[name] = *registry->partitioner(name);

  text::Table table({{"model"},
                     {"stages", text::Table::Align::right},
                     {"partitioner"},
                     {"search µs", text::Table::Align::right},
                     {"autopipe faster", text::Table::Align::right},
                     {"balance", text::Table::Align::right},
                     {"vs exact", text::Table::Align::right},
                     {"iteration ms", text::Table::Align::right},
                     {"vs autopipe", text::Table::Align::right}});
  for (const ModelProfile& model : models) {
    if (!only_model.empty() && model.name != only_model) continue;
    const std::size_t units = model.units(true).size();
    for (std::size_t stages : {2, 4, 8, 16, 32, 64}) {
      if (stages > units || (only_stages != 0 && stages != only_stages)) continue;
      std::map<std::string, Row> rows;
      for (const auto& name : partitioners)
        rows[name] = measure(*loaded[name], model, *cluster, stages);
      const Row& ours = rows["autopipe"];
      const double exact = exact_balance(model, stages);
      for (const auto& name : partitioners) {
        const Row& r = rows[name];
        if (!r.ok) {
          table.add_row({model.name, std::to_string(stages), name, "n/a (stages > blocks)", "", "", "", "", ""});
          continue;
        }
        table.add_row({model.name, std::to_string(stages), name, text::format_fixed(r.search_ms * 1000.0, 1),
                       name == "autopipe" ? "" : text::format_fixed(r.search_ms / ours.search_ms, 1) + "×",
                       text::format_fixed(r.balance, 4), text::format_fixed(r.balance / exact, 4),
                       text::format_fixed(r.iteration_ms, 2),
                       text::format_fixed(r.iteration_ms / ours.iteration_ms, 3) + "×"});
      }
    }
  }
  std::cout << "planner: search time (median of 5 batches of ≥ 1 ms), balance (slowest stage / mean) and predicted "
               "1F1B iteration\n"
               "time of one pipeline on homo-64; 'autopipe faster' = this search time / autopipe's\n\n"
            << table.str();
  return 0;
}
