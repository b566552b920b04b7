/// Simulated runs as tables and JSON (report.hpp).

#include <actorpipe/simulation_report.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"
#include "sim/stepping_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace actorpipe {

namespace {

constexpr std::size_t shown_links = 10;
constexpr std::size_t shown_devices = 8;

/// Devices by the share of their memory in use, fullest first.
std::vector<const DeviceReport*> by_memory(const SimulationReport& report) {
  std::vector<const DeviceReport*> out;
  for (const DeviceReport& d : report.devices)
    out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [](const DeviceReport* a, const DeviceReport* b) {
    return static_cast<double>(a->peak_memory_bytes) / static_cast<double>(a->memory_capacity) >
           static_cast<double>(b->peak_memory_bytes) / static_cast<double>(b->memory_capacity);
  });
  return out;
}

} // namespace

std::string format_simulation(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster) {
  using text::format_bytes;
  using text::format_fixed;
  std::string out;
  const auto [fastest, slowest] = std::minmax_element(report.iteration_ms.begin(), report.iteration_ms.end());
  out += "plan         " + describe_stages(plan) + " × " + std::to_string(plan.pipelines) +
         (plan.pipelines == 1 ? " pipeline" : " pipelines") + " of " + plan.model + " on " + plan.cluster + "; " +
         plan.partitioner + " + " + plan.mapper + ", " + plan.schedule.name + " with " +
         std::to_string(plan.schedule.micro_batch_sizes.size()) + " micro-batches\n";
  out += "sync         " + plan.sync + ", " + describe_stepping(plan.stepping) + "\n";
  out += "simulated    " + std::to_string(report.iterations) + " iteration(s) in " + format_fixed(report.total_ms, 3) +
         " ms (" + std::to_string(report.events) + " events" +
         (report.repeated_iterations > 0
              ? "; " + std::to_string(report.repeated_iterations) + " repeating the one before, not simulated again"
              : std::string()) +
         ")\n";
  out += "iteration    " + format_fixed(report.iteration_time_ms, 3) + " ms mean, " +
         (report.iteration_ms.empty() ? std::string("-")
                                      : format_fixed(*fastest, 3) + " min, " + format_fixed(*slowest, 3) + " max") +
         "\n";
  out += "throughput   " + format_fixed(report.samples_per_s, 1) + " samples/s\n\n";

  text::Table stages({{"stage", text::Table::Align::right},
                      {"blocks"},
                      {"forward ms", text::Table::Align::right},
                      {"backward ms", text::Table::Align::right},
                      {"busy", text::Table::Align::right},
                      {"bubble", text::Table::Align::right},
                      {"sync ms", text::Table::Align::right}});
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    const StageReport& r = report.stages[s];
    stages.add_row({std::to_string(s), describe_blocks(plan.stages[s]), format_fixed(r.forward_ms, 3),
                    format_fixed(r.backward_ms, 3), format_fixed(100 * r.busy, 1) + "%",
                    format_fixed(100 * r.bubble, 1) + "%", format_fixed(r.sync_ms, 3)});
  }
  out += stages.str();

  text::Table devices({{"device"},
                       {"pipeline", text::Table::Align::right},
                       {"stage", text::Table::Align::right},
                       {"busy", text::Table::Align::right},
                       {"peak memory", text::Table::Align::right},
                       {"of device", text::Table::Align::right}});
  const auto fullest = by_memory(report);
  for (std::size_t i = 0; i < std::min(shown_devices, fullest.size()); ++i) {
    const DeviceReport& d = *fullest[i];
    devices.add_row(
        {cluster.devices[d.device].name, std::to_string(d.pipeline), std::to_string(d.stage),
         format_fixed(100 * d.busy, 1) + "%", format_bytes(d.peak_memory_bytes),
         format_fixed(100.0 * static_cast<double>(d.peak_memory_bytes) / static_cast<double>(d.memory_capacity), 1) +
             "%"});
  }
  out += "\nfullest devices (" + std::to_string(std::min(shown_devices, fullest.size())) + " of " +
         std::to_string(fullest.size()) + ")\n" + devices.str();

  if (!report.links.empty()) {
    text::Table links({{"link"}, {"busy", text::Table::Align::right}, {"carried", text::Table::Align::right}});
    for (std::size_t i = 0; i < std::min(shown_links, report.links.size()); ++i) {
      const LinkReport& l = report.links[i];
      links.add_row({l.name, format_fixed(100 * l.busy, 1) + "%", format_bytes(static_cast<std::uint64_t>(l.bytes))});
    }
    out += "\nbusiest links (" + std::to_string(std::min(shown_links, report.links.size())) + " of " +
           std::to_string(report.links.size()) + " that carried traffic)\n" + links.str();
  }
  return out;
}

std::string simulation_to_json(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster) {
  using json = nlohmann::ordered_json;
  json stages = json::array();
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    const StageReport& r = report.stages[s];
    stages.push_back({{"index", s},
                      {"first_block", first_block(plan.stages[s])},
                      {"last_block", last_block(plan.stages[s])},
                      {"forward_ms", r.forward_ms},
                      {"backward_ms", r.backward_ms},
                      {"busy", r.busy},
                      {"bubble", r.bubble},
                      {"sync_ms", r.sync_ms}});
  }
  json devices = json::array();
  for (const DeviceReport& d : report.devices)
    devices.push_back({{"device", cluster.devices[d.device].name},
                       {"pipeline", d.pipeline},
                       {"stage", d.stage},
                       {"busy", d.busy},
                       {"parameter_bytes", d.parameter_bytes},
                       {"optimizer_bytes", d.optimizer_bytes},
                       {"activation_bytes", d.activation_bytes},
                       {"workspace_bytes", d.workspace_bytes},
                       {"peak_memory_bytes", d.peak_memory_bytes},
                       {"memory_bytes", d.memory_capacity}});
  json links = json::array();
  for (const LinkReport& l : report.links)
    links.push_back({{"name", l.name}, {"busy", l.busy}, {"bytes", l.bytes}});
  const json document = {{"model", plan.model},
                         {"cluster", plan.cluster},
                         {"partitioner", plan.partitioner},
                         {"mapper", plan.mapper},
                         {"schedule", plan.schedule.name},
                         {"sync", plan.sync},
                         {"stepping", stepping_json(plan.stepping)},
                         {"pipelines", plan.pipelines},
                         {"micro_batches", plan.schedule.micro_batch_sizes.size()},
                         {"iterations", report.iterations},
                         {"total_ms", report.total_ms},
                         {"iteration_time_ms", report.iteration_time_ms},
                         {"iteration_ms", report.iteration_ms},
                         {"samples_per_s", report.samples_per_s},
                         {"events", report.events},
                         {"repeated_iterations", report.repeated_iterations},
                         {"stages", stages},
                         {"devices", devices},
                         {"links", links}};
  return document.dump(2) + "\n";
}

} // namespace actorpipe
