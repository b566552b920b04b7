/// tune_plan(): the simulator's fastest shapes, each measured in a short run; the
/// fastest measured wins (plan.tune = "profile").

#include "run_training.hpp"

#include <actorpipe/planner.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace actorpipe {

namespace {

/// Steps a short run leaves untimed: the first builds LibTorch's caches and the
/// threads' working sets, the second still overlaps with it.
constexpr std::uint64_t untimed_steps = 2;

/// `job` with the shape fixed, as the planner tried it.
JobSpec with_shape(const JobSpec& job, const TriedShape& shape) {
  JobSpec fixed = job;
  fixed.plan.stages = static_cast<std::uint32_t>(shape.stages);
  fixed.plan.pipelines = static_cast<std::uint32_t>(shape.pipelines);
  fixed.plan.micro_batches = shape.micro_batches;
  fixed.plan.tune = "simulate";
  return fixed;
}

std::string shape_text(const TunedSetting& s) {
  return std::to_string(s.stages) + " × " + std::to_string(s.pipelines) + " × " + std::to_string(s.micro_batches);
}

} // namespace

Result<std::pair<Plan, TuneReport>> tune_plan(const JobSpec& job, const Plan& planned, const TuneOptions& options) {
  const PlanOptions& p = job.plan;
  if (p.stages != auto_count && p.pipelines != auto_count && p.micro_batches != auto_count)
    return Error::bad_input(job.where("plan.tune") +
                            "\"profile\" chooses among the shapes \"auto\" leaves open, and plan.stages, "
                            "plan.pipelines and plan.micro_batches are all fixed");
  std::vector<TriedShape> shapes;
  for (const TriedShape& shape : planned.tried)
    if (shape.fits && shapes.size() < p.tune_candidates) shapes.push_back(shape);
  if (!options.plugins) return Error::bad_input("tune_plan: no plugin registry to plan the shapes with");
  if (shapes.size() < 2)
    return Error::bad_input(job.where("plan.tune") + "the planner found " + std::to_string(shapes.size()) +
                            " shape that fits; there is nothing to choose between");

  TuneReport report;
  std::vector<Plan> plans;
  const std::filesystem::path scratch(options.scratch_dir);
  struct RemoveAfter {
    std::filesystem::path path;
    ~RemoveAfter() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_after{scratch};
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    if (options.stop_requested && options.stop_requested()) return Error::run_failed("tuning was interrupted");
    TunedSetting& setting = report.tried.emplace_back();
    setting.stages = shapes[k].stages;
    setting.pipelines = shapes[k].pipelines;
    setting.micro_batches = shapes[k].micro_batches;
    setting.predicted_samples_per_s = shapes[k].samples_per_s;
    const JobSpec fixed = with_shape(job, shapes[k]);
    auto plan = make_plan(fixed, *options.plugins);
    if (!plan) {
      setting.error = plan.error().message;
      plans.emplace_back();
    } else {
      plans.push_back(*plan);
      RunOptions run;
      run.steps = p.tune_steps;
      run.output_dir = (scratch / ("setting-" + std::to_string(k + 1))).string();
      run.data = options.data;
      run.plugins = options.plugins;
      run.stop_requested = options.stop_requested;
      std::vector<double> timed;
      run.on_step = [&timed](const StepMetrics& m) {
        if (m.step > untimed_steps) timed.push_back(m.step_ms);
      };
      auto summary = actors::run_training(fixed, *plan, run, std::nullopt);
      // Bad input (a straggler spec, a data file) is the job's, whatever the shape.
      if (!summary && summary.error().code == ErrorCode::bad_input) return std::move(summary).error();
      if (!summary) {
        setting.error = summary.error().message;
      } else if (summary->stopped) {
        return Error::run_failed("tuning was interrupted");
      } else if (!timed.empty()) {
        const auto middle = timed.begin() + static_cast<std::ptrdiff_t>(timed.size() / 2);
        std::nth_element(timed.begin(), middle, timed.end());
        setting.median_step_ms = *middle;
        setting.measured_samples_per_s = 1000.0 * plan->batch_size / *middle;
      }
    }
    if (options.on_setting) options.on_setting(k + 1, shapes.size(), setting);
  }

  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < report.tried.size(); ++k)
    if (report.tried[k].error.empty() &&
        (!best || report.tried[k].measured_samples_per_s > report.tried[*best].measured_samples_per_s))
      best = k;
  if (!best)
    return Error::run_failed("tuning: no shape could be run; the first: " + shape_text(report.tried.front()) + ": " +
                             report.tried.front().error);
  report.chosen = *best;
  const TunedSetting& chosen = report.tried[*best];
  std::size_t measured = 0;
  for (const TunedSetting& s : report.tried)
    measured += s.error.empty() ? 1 : 0;
  report.why = "it measured the most samples/s of the " + std::to_string(measured) + " shapes run (" +
               text::format_fixed(chosen.measured_samples_per_s, 0) + "); the simulator ranked it " +
               (*best == 0 ? std::string("first as well")
                           : "#" + std::to_string(*best + 1) + " (predicting " +
                                 text::format_fixed(chosen.predicted_samples_per_s, 0) + " against the first's " +
                                 text::format_fixed(report.tried.front().predicted_samples_per_s, 0) + ")");
  return std::make_pair(std::move(plans[*best]), std::move(report));
}

std::string tune_report_to_text(const TuneReport& report) {
  using text::Table;
  Table table({{"", Table::Align::left},
               {"stages × pipelines × micro-batches", Table::Align::left},
               {"predicted samples/s", Table::Align::right},
               {"measured samples/s", Table::Align::right},
               {"median step ms", Table::Align::right}});
  for (std::size_t k = 0; k < report.tried.size(); ++k) {
    const TunedSetting& s = report.tried[k];
    table.add_row({k == report.chosen ? "→" : "", shape_text(s), text::format_fixed(s.predicted_samples_per_s, 0),
                   s.error.empty() ? text::format_fixed(s.measured_samples_per_s, 0) : "failed: " + s.error,
                   s.error.empty() ? text::format_fixed(s.median_step_ms, 2) : ""});
  }
  return table.str() + "chose " + shape_text(report.tried.at(report.chosen)) + ": " + report.why + "\n";
}

std::string tune_report_to_json(const TuneReport& report) {
  nlohmann::json tried = nlohmann::json::array();
  for (const TunedSetting& s : report.tried) {
    nlohmann::json row{{"stages", s.stages},
                       {"pipelines", s.pipelines},
                       {"micro_batches", s.micro_batches},
                       {"predicted_samples_per_s", s.predicted_samples_per_s}};
    if (s.error.empty()) {
      row["measured_samples_per_s"] = s.measured_samples_per_s;
      row["median_step_ms"] = s.median_step_ms;
    } else {
      row["error"] = s.error;
    }
    tried.push_back(std::move(row));
  }
  return nlohmann::json{{"tried", std::move(tried)}, {"chosen", report.chosen}, {"why", report.why}}.dump(2) + "\n";
}

Result<TuneReport> tune_report_from_json(const std::string& text) {
  TuneReport report;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& tried = j.at("tried");
    for (std::size_t k = 0; k < tried.size(); ++k) {
      const nlohmann::json& row = tried.at(k);
      TunedSetting& s = report.tried.emplace_back();
      s.stages = row.at("stages").get<std::size_t>();
      s.pipelines = row.at("pipelines").get<std::size_t>();
      s.micro_batches = row.at("micro_batches").get<std::uint32_t>();
      s.predicted_samples_per_s = row.at("predicted_samples_per_s").get<double>();
      if (row.contains("error")) {
        s.error = row["error"].get<std::string>();
      } else {
        s.measured_samples_per_s = row.at("measured_samples_per_s").get<double>();
        s.median_step_ms = row.at("median_step_ms").get<double>();
      }
    }
    report.chosen = j.at("chosen").get<std::size_t>();
    report.why = j.at("why").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return Error::bad_input(std::string("not a tuning report: ") + e.what());
  }
  if (report.chosen >= report.tried.size())
    return Error::bad_input("chosen: " + std::to_string(report.chosen) + " names none of the " +
                            std::to_string(report.tried.size()) + " shapes tried");
  return report;
}

} // namespace actorpipe
