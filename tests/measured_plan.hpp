#pragma once

/// What the suites that train start from: a job profiled on this machine and planned
/// with the build tree's plugins. Public API only, so the embedding test can use it.

#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/training.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe::test {

class ScratchDir;

struct MeasuredPlan {
  JobSpec job;
  Plan plan;
};

/// `job` with its profile measured (`measure` says how) and its plan made; a failure
/// of either fails the test case.
MeasuredPlan measure_and_plan(JobSpec job, const MeasureOptions& measure);

/// `job` measured in one timed pass of each unit, no warm-up (enough to plan on), and
/// planned; or the job `toml`, written to `dir` as job.toml.
MeasuredPlan quick_plan(JobSpec job);
MeasuredPlan quick_plan(const ScratchDir& dir, const std::string& toml);

/// A run of a plan: its summary and each step's loss.
struct TrainedRun {
  RunSummary summary;
  std::vector<double> losses;
};

/// `p` trained for `steps` steps into `out`; a failed run fails the test case.
TrainedRun train_for(const MeasuredPlan& p, std::uint64_t steps, const std::string& out);

} // namespace actorpipe::test
