/// Tuning reports as text and JSON, and the plan of a tuned run resumed.

#include <actorpipe/tuning.hpp>

#include <actorpipe/planner.hpp>

#include "base/statistics.hpp"
#include "base/input_file.hpp"
#include "base/text.hpp"
#include "base/text_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <numeric>
#include <type_traits>

namespace actorpipe {

namespace {

std::string shape_text(const TunedSetting& s) {
  return std::to_string(s.stages) + " × " + std::to_string(s.pipelines) + " × " + std::to_string(s.micro_batches) +
         (s.scheduler.empty() ? "" : ", " + s.scheduler);
}

} // namespace

void record_measurement(TunedSetting& setting, std::uint32_t batch_size, std::vector<double> step_ms) {
  if (step_ms.empty()) return;
  const double ms = std::accumulate(step_ms.begin(), step_ms.end(), 0.0);
  setting.measured_samples_per_s =
      ms > 0 ? 1000.0 * static_cast<double>(batch_size) * static_cast<double>(step_ms.size()) / ms : 0.0;
  setting.median_step_ms = median(std::move(step_ms));
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
  const TunedSetting& chosen = report.tried.at(report.chosen);
  return table.str() + "chose " + describe_shape(chosen.stages, chosen.pipelines, chosen.micro_batches) +
         (chosen.scheduler.empty() ? "" : ", " + chosen.scheduler) + ": " + report.why + "\n";
}

std::string tune_report_to_json(const TuneReport& report) {
  nlohmann::json tried = nlohmann::json::array();
  for (const TunedSetting& s : report.tried) {
    nlohmann::json row{{"stages", s.stages},
                       {"pipelines", s.pipelines},
                       {"micro_batches", s.micro_batches},
                       {"predicted_samples_per_s", s.predicted_samples_per_s}};
    if (!s.scheduler.empty()) row["scheduler"] = s.scheduler;
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

namespace {

/// `object[key]` as a T, or an error naming the field ("tried[2].stages: missing") in
/// words of its own, not the JSON library's.
template <class T> Result<T> field(const nlohmann::json& object, const char* key, const std::string& where) {
  const std::string path = where.empty() ? std::string(key) : where + "." + key;
  if (!object.is_object() || !object.contains(key)) return Error::bad_input(path + ": missing");
  const nlohmann::json& value = object[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) return Error::bad_input(path + ": expected a string, found " + value.dump());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) return Error::bad_input(path + ": expected a number, found " + value.dump());
  } else {
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
      return Error::bad_input(path + ": expected a whole number ≥ 0, found " + value.dump());
    if (value.get<std::uint64_t>() > std::numeric_limits<T>::max())
      return Error::bad_input(path + ": " + value.dump() + " is too large");
  }
  return value.get<T>();
}

} // namespace

Result<TuneReport> tune_report_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error::bad_input("not a tuning report: not JSON");
  if (!j.is_object() || !j.contains("tried") || !j["tried"].is_array())
    return Error::bad_input("not a tuning report: no list of shapes tried (tried)");
  TuneReport report;
  const nlohmann::json& tried = j["tried"];
  for (std::size_t k = 0; k < tried.size(); ++k) {
    const nlohmann::json& row = tried[k];
    const std::string where = "tried[" + std::to_string(k) + "]";
    TunedSetting& s = report.tried.emplace_back();
    auto stages = field<std::size_t>(row, "stages", where);
    ACTORPIPE_TRY(stages);
    auto pipelines = field<std::size_t>(row, "pipelines", where);
    ACTORPIPE_TRY(pipelines);
    auto micro_batches = field<std::uint32_t>(row, "micro_batches", where);
    ACTORPIPE_TRY(micro_batches);
    auto predicted = field<double>(row, "predicted_samples_per_s", where);
    ACTORPIPE_TRY(predicted);
    s.stages = *stages;
    s.pipelines = *pipelines;
    s.micro_batches = *micro_batches;
    s.predicted_samples_per_s = *predicted;
    if (row.contains("scheduler")) {
      auto scheduler = field<std::string>(row, "scheduler", where);
      ACTORPIPE_TRY(scheduler);
      s.scheduler = *scheduler;
    }
    if (row.contains("error")) {
      auto error = field<std::string>(row, "error", where);
      ACTORPIPE_TRY(error);
      s.error = *error;
    } else {
      auto measured = field<double>(row, "measured_samples_per_s", where);
      ACTORPIPE_TRY(measured);
      auto step = field<double>(row, "median_step_ms", where);
      ACTORPIPE_TRY(step);
      s.measured_samples_per_s = *measured;
      s.median_step_ms = *step;
    }
  }
  auto chosen = field<std::size_t>(j, "chosen", "");
  ACTORPIPE_TRY(chosen);
  auto why = field<std::string>(j, "why", "");
  ACTORPIPE_TRY(why);
  report.chosen = *chosen;
  report.why = *why;
  if (report.chosen >= report.tried.size())
    return Error::bad_input("chosen: " + std::to_string(report.chosen) + " names none of the " +
                            std::to_string(report.tried.size()) + " shapes tried");
  return report;
}

JobSpec job_with_shape(const JobSpec& job, const TunedSetting& shape) {
  JobSpec fixed = job;
  fixed.plan.stages = static_cast<std::uint32_t>(shape.stages);
  fixed.plan.pipelines = static_cast<std::uint32_t>(shape.pipelines);
  fixed.plan.micro_batches = shape.micro_batches;
  if (!shape.scheduler.empty()) fixed.plan.scheduler = shape.scheduler;
  fixed.plan.tune = Tuning::simulate;
  return fixed;
}

Result<std::optional<std::pair<Plan, TuneReport>>>
plan_resumed_tuning(const JobSpec& job, const PluginRegistry& plugins, const std::string& run_dir) {
  const std::string file = run_dir + "/tune.json";
  if (job.plan.tune != Tuning::profile || run_dir.empty() || !std::filesystem::exists(file))
    return std::optional<std::pair<Plan, TuneReport>>{};
  auto text = read_file(file);
  ACTORPIPE_TRY(text);
  auto report = tune_report_from_json(*text);
  if (!report) return Error::bad_input(file + ": " + report.error().message);
  auto plan = make_plan(job_with_shape(job, report->tried[report->chosen]), plugins);
  ACTORPIPE_TRY(plan);
  return std::make_optional(std::make_pair(std::move(*plan), std::move(*report)));
}

} // namespace actorpipe
