#pragma once

/// The one course a job's training takes, whoever asks for it (`actorpipe run` and
/// `launch`, a Lua script's actorpipe.run and actorpipe.launch, a host application):
/// plan the job, or take the shape of the tuned run it resumes; tune it where plan.tune
/// = "profile"; train it, in this process or launched over several; and keep the
/// tuning's report as tune.json beside the run's files. Part of
/// libactorpipe: it reaches the training runtime through its entry points, loading it
/// on first use, so a program that only plans never loads LibTorch.

#include <actorpipe/export.hpp>
#include <actorpipe/launch.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/training.hpp>
#include <actorpipe/tuning.hpp>

#include <functional>
#include <optional>

namespace actorpipe {

struct TrainJobOptions {
  /// The run's own options. `output_dir` is required; the tuning's short runs go under
  /// its `tune/`, and stop when `run.stop_requested` says so.
  RunOptions run;
  PlanProgress on_planning; ///< the planner's progress (make_plan's)
  /// Once planned, before any tuning or training: a caller that catches interrupts for
  /// the run starts catching them here, so that planning still ends at a Ctrl-C.
  std::function<void(const Plan& planned)> on_planned;
  /// Before tuning: how many shapes it will run, and for how many steps each.
  std::function<void(std::size_t candidates, std::size_t steps)> on_tuning;
  std::function<void(std::size_t, std::size_t, const TunedSetting&)> on_setting; ///< TuneOptions::on_setting
  std::function<void(const TuneReport&)> on_tuned;                               ///< tuned, before training
  /// The plan as it will train, with the step time the simulator predicts on this machine.
  std::function<void(const Plan& plan, double predicted_step_ms)> on_plan;
  /// Where set, the final plan trains over worker processes (launch_training());
  /// else in this process (run_training()). Tuning runs in this process either way.
  std::optional<LaunchOptions> launch;
};

struct TrainedJob {
  RunSummary summary;
  Plan plan;                       ///< the plan that trained: the tuned shape's, where tuned
  double predicted_step_ms = 0;    ///< predicted_step_ms(job, plan)
  std::optional<TuneReport> tuned; ///< where plan.tune = "profile" (also when resumed)
};

/// Plans, tunes, trains `job` as the header says, with `plugins` (the registry its plan
/// and sync policy are found in). Bad input where the job names no model; the first
/// error of planning, tuning or the run otherwise. tune.json is written atomically.
ACTORPIPE_EXPORT Result<TrainedJob> train_job(const JobSpec& job, const PluginRegistry& plugins,
                                              const TrainJobOptions& options);

} // namespace actorpipe
