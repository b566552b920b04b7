#include <actorpipe/plan_report.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"
#include "sim/stepping_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace actorpipe {

namespace {

/// The smallest memory among the devices running a stage: what it must fit in.
std::uint64_t stage_capacity(const Plan& plan, const ClusterSpec& cluster, std::size_t stage) {
  std::uint64_t capacity = std::numeric_limits<std::uint64_t>::max();
  for (const auto& pipeline : plan.devices)
    capacity = std::min(capacity, cluster.devices[pipeline[stage]].memory_bytes);
  return capacity;
}

std::string devices_cell(const Plan& plan, const ClusterSpec& cluster, std::size_t stage) {
  std::string cell = cluster.devices[plan.devices[0][stage]].name;
  if (plan.pipelines > 1) cell += " +" + std::to_string(plan.pipelines - 1);
  return cell;
}

} // namespace

std::string format_plan(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster) {
  using text::format_bytes;
  using text::format_fixed;
  std::string out;
  out += "model        " + plan.model + " (" + std::to_string(profile.blocks.size()) + " blocks, " +
         format_bytes(profile.total_parameter_bytes()) + " of parameters" +
         (profile.precision ? std::string("; profiled in ") + precision_name(*profile.precision) : "") + ")\n";
  out += "cluster      " + plan.cluster + " (" + std::to_string(cluster.servers.size()) +
         (cluster.servers.size() == 1 ? " server, " : " servers, ") + std::to_string(cluster.devices.size()) +
         " devices)\n";
  out += "plan         " + describe_stages(plan) + " × " + std::to_string(plan.pipelines) +
         (plan.pipelines == 1 ? " pipeline" : " pipelines") + "; partitioner " + plan.partitioner + ", mapper " +
         plan.mapper + ", scheduler " + plan.scheduler + ", sync " + plan.sync + " (" +
         describe_stepping(plan.stepping) + ")\n";
  const auto [smallest, largest] =
      std::minmax_element(plan.schedule.micro_batch_sizes.begin(), plan.schedule.micro_batch_sizes.end());
  out +=
      "batch        " + std::to_string(plan.batch_size) + " samples; " +
      std::to_string(plan.schedule.micro_batch_sizes.size()) + " micro-batches of " +
      (*smallest == *largest ? std::to_string(*largest) : std::to_string(*smallest) + "-" + std::to_string(*largest)) +
      " per pipeline\n";
  out += "predicted    " + format_fixed(plan.iteration_time_ms, 3) + " ms per iteration, " +
         format_fixed(plan.samples_per_s, 1) + " samples/s\n\n";

  text::Table table({{"stage", text::Table::Align::right},
                     {"blocks"},
                     {"device"},
                     {"compute ms", text::Table::Align::right},
                     {"bubble", text::Table::Align::right},
                     {"parameters", text::Table::Align::right},
                     {"optimizer", text::Table::Align::right},
                     {"activations", text::Table::Align::right},
                     {"workspace", text::Table::Align::right},
                     {"memory", text::Table::Align::right},
                     {"of device", text::Table::Align::right}});
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const StageEstimate& e = plan.stages[s].estimate;
    const double share =
        100.0 * static_cast<double>(e.memory_bytes) / static_cast<double>(stage_capacity(plan, cluster, s));
    table.add_row({std::to_string(s), describe_blocks(plan.stages[s]), devices_cell(plan, cluster, s),
                   format_fixed(e.compute_ms, 2), format_fixed(100.0 * e.bubble, 1) + "%",
                   format_bytes(e.parameter_bytes), format_bytes(e.optimizer_bytes), format_bytes(e.activation_bytes),
                   format_bytes(e.workspace_bytes), format_bytes(e.memory_bytes), format_fixed(share, 1) + "%"});
  }
  out += table.str();
  std::string recomputing;
  for (std::size_t s = 0; s < plan.stages.size(); ++s)
    if (plan.stages[s].recompute != Recompute::none)
      recomputing += (recomputing.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s) + " " +
                     std::string(option_name(plan.stages[s].recompute));
  out += "\nbalance      " + format_fixed(plan.balance, 3) + " (max stage compute / mean)\n";
  if (!recomputing.empty())
    out += "recompute    " + recomputing + " (forwards run again before their backwards; activations not kept)\n";
  out += "parameters   " + format_fixed(plan.parameter_balance, 3) + " (max stage parameter bytes / mean)\n";
  out += "search       " + format_fixed(plan.search_ms, 3) + " ms (" + std::to_string(plan.candidates) +
         (plan.candidates == 1 ? " shape" : " shapes") + " simulated)\n";
  if (plan.candidates > 1) out += "\n" + format_tried_shapes(plan);
  return out;
}

std::string format_tried_shapes(const Plan& plan) {
  using text::format_fixed;
  text::Table table({{"stages × pipelines", text::Table::Align::right},
                     {"micro-batches", text::Table::Align::right},
                     {"slices", text::Table::Align::right},
                     {"scheduler"},
                     {"iteration ms", text::Table::Align::right},
                     {"samples/s", text::Table::Align::right},
                     {"vs best", text::Table::Align::right},
                     {"fits"}});
  for (const TriedShape& t : plan.tried)
    table.add_row(
        {std::to_string(t.stages) + " × " + std::to_string(t.pipelines), std::to_string(t.micro_batches),
         std::to_string(t.slices), t.scheduler, format_fixed(t.iteration_time_ms, 3), format_fixed(t.samples_per_s, 1),
         format_fixed(plan.tried.front().samples_per_s > 0 ? t.samples_per_s / plan.tried.front().samples_per_s : 0.0,
                      3) +
             "×",
         t.fits ? "yes" : "no"});
  return "best " + std::to_string(plan.tried.size()) + " of " + std::to_string(plan.candidates) + " shapes tried\n" +
         table.str();
}

namespace {

using json = nlohmann::ordered_json; // fields in the order a reader expects them

json plan_document(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster) {
  json stages = json::array();
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan& stage = plan.stages[s];
    const StageEstimate& e = stage.estimate;
    json devices = json::array();
    for (const auto& pipeline : plan.devices)
      devices.push_back(cluster.devices[pipeline[s]].name);
    stages.push_back({
        {"index", s},
        {"first_block", first_block(stage)},
        {"last_block", last_block(stage)},
        {"begin", {{"block", stage.begin.block}, {"sub_block", stage.begin.sub}}},
        {"end", {{"block", stage.end.block}, {"sub_block", stage.end.sub}}},
        {"blocks", describe_blocks(stage)},
        {"device", devices.front()},
        {"devices", devices},
        {"forward_ms", e.forward_ms},
        {"backward_ms", e.backward_ms},
        {"compute_ms", e.compute_ms},
        {"bubble", e.bubble},
        {"parameter_bytes", e.parameter_bytes},
        {"optimizer_bytes", e.optimizer_bytes},
        {"activation_bytes", e.activation_bytes},
        {"workspace_bytes", e.workspace_bytes},
        {"memory_bytes", e.memory_bytes},
        {"device_memory_bytes", stage_capacity(plan, cluster, s)},
        {"recompute", option_name(stage.recompute)},
    });
  }
  json tried = json::array();
  for (const TriedShape& t : plan.tried)
    tried.push_back({{"stages", t.stages},
                     {"pipelines", t.pipelines},
                     {"micro_batches", t.micro_batches},
                     {"slices", t.slices},
                     {"scheduler", t.scheduler},
                     {"iteration_time_ms", t.iteration_time_ms},
                     {"samples_per_s", t.samples_per_s},
                     {"fits", t.fits}});
  json schedule_actions = json::array();
  for (const auto& actions : plan.schedule.stages) {
    std::string line;
    for (const Action& a : actions)
      line += (line.empty() ? "" : " ") + to_string(a);
    schedule_actions.push_back(line);
  }
  const json document = {
      {"model", plan.model},
      {"model_blocks", profile.blocks.size()},
      // What the profile's bytes were measured in; null where it does not say.
      {"precision", profile.precision ? json(precision_name(*profile.precision)) : json(nullptr)},
      {"cluster", plan.cluster},
      {"partitioner", plan.partitioner},
      {"mapper", plan.mapper},
      {"schedule", plan.scheduler},
      {"sync", plan.sync},
      {"stepping", stepping_json(plan.stepping)},
      {"pipelines", plan.pipelines},
      {"stages_per_pipeline", plan.stages.size()},
      {"batch_size", plan.batch_size},
      {"micro_batches", plan.schedule.micro_batch_sizes.size()},
      {"micro_batch_sizes", plan.schedule.micro_batch_sizes},
      {"iteration_time_ms", plan.iteration_time_ms},
      {"samples_per_s", plan.samples_per_s},
      {"balance", plan.balance},
      {"parameter_balance", plan.parameter_balance},
      {"search_ms", plan.search_ms},
      {"candidates", plan.candidates},
      {"tried", tried},
      {"stages", stages},
      {"schedule_actions", schedule_actions},
  };
  return document;
}

/// The largest share of a device's memory any stage of the plan uses.
double fullest(const Plan& plan, const ClusterSpec& cluster) {
  double share = 0;
  for (std::size_t s = 0; s < plan.stages.size(); ++s)
    share = std::max(share, static_cast<double>(plan.stages[s].estimate.memory_bytes) /
                                static_cast<double>(stage_capacity(plan, cluster, s)));
  return share;
}

} // namespace

std::string plan_to_json(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster) {
  return plan_document(plan, profile, cluster).dump(2) + "\n";
}

std::string comparison_to_json(const std::vector<Plan>& plans, const ModelProfile& profile,
                               const ClusterSpec& cluster) {
  json out = json::array();
  for (const Plan& plan : plans)
    out.push_back(plan_document(plan, profile, cluster));
  return out.dump(2) + "\n";
}

std::string format_comparison(const std::vector<Plan>& plans, const ClusterSpec& cluster) {
  using text::format_fixed;
  text::Table table({{"partitioner"},
                     {"mapper"},
                     {"scheduler"},
                     {"stages × pipelines", text::Table::Align::right},
                     {"micro-batches", text::Table::Align::right},
                     {"iteration ms", text::Table::Align::right},
                     {"samples/s", text::Table::Align::right},
                     {"vs first", text::Table::Align::right},
                     {"balance", text::Table::Align::right},
                     {"memory", text::Table::Align::right},
                     {"search ms", text::Table::Align::right}});
  for (const Plan& plan : plans)
    table.add_row({plan.partitioner, plan.mapper, plan.scheduler,
                   std::to_string(plan.stages.size()) + " × " + std::to_string(plan.pipelines),
                   std::to_string(plan.schedule.micro_batch_sizes.size()), format_fixed(plan.iteration_time_ms, 2),
                   format_fixed(plan.samples_per_s, 1),
                   format_fixed(plan.samples_per_s / plans.front().samples_per_s, 2) + "×",
                   format_fixed(plan.balance, 3), format_fixed(100.0 * fullest(plan, cluster), 1) + "%",
                   format_fixed(plan.search_ms, 2)});
  return table.str() + "\nmemory: the fullest device's share in use; vs first: samples/s against the first row\n";
}

} // namespace actorpipe
