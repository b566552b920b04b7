#include "measured_plan.hpp"

#include "test_support.hpp"

#include <actorpipe/planner.hpp>

namespace actorpipe::test {

MeasuredPlan measure_and_plan(JobSpec job, const MeasureOptions& measure) {
  auto profile = measure_profile(job, measure);
  REQUIRE_OK(profile);
  job.profile = *profile;
  auto plan = make_plan(job, plugins());
  REQUIRE_OK(plan);
  return {std::move(job), *std::move(plan)};
}

MeasuredPlan quick_plan(JobSpec job) {
  MeasureOptions measure;
  measure.warmup = 0;
  measure.repeats = 1;
  return measure_and_plan(std::move(job), measure);
}

MeasuredPlan quick_plan(const ScratchDir& dir, const std::string& toml) {
  auto job = load_job(dir.write("job.toml", toml));
  REQUIRE_OK(job);
  return quick_plan(*std::move(job));
}

TrainedRun train_for(const MeasuredPlan& p, std::uint64_t steps, const std::string& out) {
  TrainedRun t;
  RunOptions options;
  options.steps = steps;
  options.output_dir = out;
  options.on_step = [&](const StepMetrics& m) { t.losses.push_back(m.loss); };
  auto summary = run_training(p.job, p.plan, options);
  REQUIRE_OK(summary);
  t.summary = *summary;
  return t;
}

} // namespace actorpipe::test
