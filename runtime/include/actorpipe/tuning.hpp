#pragma once

/// What tuning by measurement (plan.tune = "profile") tried and chose, as values with a
/// text and a JSON form that parses back, and the plan of a tuned run resumed. The
/// measuring itself needs the training runtime: tune_plan() in actorpipe/training.hpp.

#include <actorpipe/error.hpp>
#include <actorpipe/export.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace actorpipe {

class PluginRegistry;

/// One shape the tuner measured: what the simulator predicted and what a short run
/// measured.
struct TunedSetting {
  std::size_t stages = 0;
  std::size_t pipelines = 0;
  std::uint32_t micro_batches = 0;
  double predicted_samples_per_s = 0;
  double measured_samples_per_s = 0; ///< samples of the timed steps over their time (modelled on emulated devices)
  double median_step_ms = 0;
  std::string error;          ///< why it could not be measured; empty when it was
  std::string scheduler = {}; ///< the shape's scheduler where plan.scheduler is "auto"; empty: the job's
};

/// Fills in what a short run of `setting` measured from its timed steps' times:
/// samples/s as the steps' samples over their time, not over a typical step's. Where
/// pipelines step alone steps end in bursts (two at once, then a pause), and a median
/// would price the pause alone.
ACTORPIPE_EXPORT void record_measurement(TunedSetting& setting, std::uint32_t batch_size, std::vector<double> step_ms);

/// What the tuner tried, in the simulator's order, and which it chose and why.
struct TuneReport {
  std::vector<TunedSetting> tried;
  std::size_t chosen = 0; ///< into `tried`
  std::string why;
};

/// The report as a table (a row per setting, the chosen one marked) and the reason.
ACTORPIPE_EXPORT std::string tune_report_to_text(const TuneReport& report);
/// The report as JSON: {"tried": [...], "chosen": k, "why": "..."}.
ACTORPIPE_EXPORT std::string tune_report_to_json(const TuneReport& report);
/// A report read back from tune_report_to_json()'s text; bad input naming the field
/// that is missing or wrong.
ACTORPIPE_EXPORT Result<TuneReport> tune_report_from_json(const std::string& text);

/// `job` with the setting's shape fixed and tuning off: what a tuned run plans with.
ACTORPIPE_EXPORT JobSpec job_with_shape(const JobSpec& job, const TunedSetting& shape);

/// A tuned run resumed keeps the shape it chose: with plan.tune = "profile" and
/// `run_dir`/tune.json there, the plan of its chosen shape and the report; none
/// otherwise (the caller plans and tunes as usual).
ACTORPIPE_EXPORT Result<std::optional<std::pair<Plan, TuneReport>>>
plan_resumed_tuning(const JobSpec& job, const PluginRegistry& plugins, const std::string& run_dir);

} // namespace actorpipe
