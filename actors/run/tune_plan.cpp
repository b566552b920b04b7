/// tune_plan(): the simulator's fastest shapes, each measured in a short run; the
/// fastest measured wins (plan.tune = "profile").

#include "run/run_training.hpp"

#include <actorpipe/planner.hpp>

#include "base/output_folder.hpp"
#include "base/scope_exit.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <filesystem>

namespace actorpipe {

namespace {

/// Steps a short run leaves untimed: the first builds LibTorch's caches and the
/// threads' working sets, the second still overlaps with it.
constexpr std::uint64_t untimed_steps = 2;

/// The setting a tried shape is; under plan.scheduler = "auto" its scheduler with it.
TunedSetting setting_of(const TriedShape& shape, bool job_scheduler_is_auto) {
  TunedSetting s;
  s.stages = shape.stages;
  s.pipelines = shape.pipelines;
  s.micro_batches = shape.micro_batches;
  s.scheduler = job_scheduler_is_auto ? shape.scheduler : std::string();
  s.predicted_samples_per_s = shape.samples_per_s;
  return s;
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
  const ScopeExit remove_after([&scratch] {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  });
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    if (options.stop_requested && options.stop_requested()) return Error::run_failed("tuning was interrupted");
    TunedSetting& setting = report.tried.emplace_back(setting_of(shapes[k], job.plan.scheduler == auto_scheduler));
    const JobSpec fixed = job_with_shape(job, setting);
    auto plan = make_plan(fixed, *options.plugins);
    if (!plan) {
      setting.error = plan.error().message;
      plans.emplace_back();
    } else {
      plans.push_back(*plan);
      RunOptions run;
      run.steps = p.tune_steps;
      // Made inside the run's folder without following a link planted as its "tune".
      auto folder =
          make_folder_inside(scratch.parent_path().string(), scratch.filename() / ("setting-" + std::to_string(k + 1)));
      ACTORPIPE_TRY(folder);
      run.output_dir = *folder;
      run.data = options.data;
      run.plugins = options.plugins;
      run.stop_requested = options.stop_requested;
      std::vector<double> timed;
      run.on_step = [&timed](const StepMetrics& m) {
        if (m.step > untimed_steps) timed.push_back(m.step_ms);
      };
      auto summary = actors::run_training(fixed, *plan, run);
      // Bad input (a straggler spec, a data file) is the job's, whatever the shape.
      if (!summary && summary.error().code == ErrorCode::bad_input) return std::move(summary).error();
      if (!summary) {
        setting.error = summary.error().message;
      } else if (summary->stopped) {
        return Error::run_failed("tuning was interrupted");
      } else {
        record_measurement(setting, plan->batch_size, std::move(timed));
      }
    }
    if (options.on_setting) options.on_setting(k + 1, shapes.size(), setting);
  }

  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < report.tried.size(); ++k)
    if (report.tried[k].error.empty() &&
        (!best || report.tried[k].measured_samples_per_s > report.tried[*best].measured_samples_per_s))
      best = k;
  if (!best) return Error::run_failed("tuning: no shape could be run; the first: " + report.tried.front().error);
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

} // namespace actorpipe
