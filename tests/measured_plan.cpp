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

} // namespace actorpipe::test
