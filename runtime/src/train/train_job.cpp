/// train_job(): plan (or the resumed tuned shape), tune, train, tune.json.

#include <actorpipe/train_job.hpp>

#include "base/atomic_file.hpp"
#include "train/training_entry.hpp"

namespace actorpipe {

Result<TrainedJob> train_job(const JobSpec& job, const PluginRegistry& plugins, const TrainJobOptions& options) {
  if (job.model.zoo == ZooModel::none)
    return Error::bad_input(job.where("model.zoo") + "the job names no model to train (model.zoo)");
  auto training = train::training_entry_points();
  ACTORPIPE_TRY(training);
  TrainedJob trained;
  // A tuned run resumed keeps the shape it chose.
  auto resumed = plan_resumed_tuning(job, plugins, options.run.resume);
  ACTORPIPE_TRY(resumed);
  if (*resumed) {
    trained.plan = std::move((*resumed)->first);
    trained.tuned = std::move((*resumed)->second);
  } else {
    auto plan = make_plan(job, plugins, options.on_planning);
    ACTORPIPE_TRY(plan);
    trained.plan = std::move(*plan);
  }
  if (options.on_planned) options.on_planned(trained.plan);
  if (!trained.tuned && job.plan.tune == Tuning::profile) {
    if (options.on_tuning)
      options.on_tuning(std::min<std::size_t>(job.plan.tune_candidates, trained.plan.tried.size()),
                        job.plan.tune_steps);
    TuneOptions tune;
    tune.scratch_dir = options.run.output_dir + "/tune";
    tune.data = options.run.data;
    tune.plugins = &plugins;
    tune.on_setting = options.on_setting;
    tune.stop_requested = options.run.stop_requested;
    auto result = (*training)->tune_plan(job, trained.plan, tune);
    ACTORPIPE_TRY(result);
    trained.plan = std::move(result->first);
    trained.tuned = std::move(result->second);
    if (options.on_tuned) options.on_tuned(*trained.tuned);
  }
  auto predicted = (*training)->predicted_step_ms(job, trained.plan);
  ACTORPIPE_TRY(predicted);
  trained.predicted_step_ms = *predicted;
  if (options.on_plan) options.on_plan(trained.plan, trained.predicted_step_ms);
  RunOptions run = options.run;
  if (!run.plugins) run.plugins = &plugins;
  auto summary = options.launch ? (*training)->launch_training(job, trained.plan, run, *options.launch)
                                : (*training)->run_training(job, trained.plan, run);
  ACTORPIPE_TRY(summary);
  trained.summary = std::move(*summary);
  if (trained.tuned)
    ACTORPIPE_TRY(
        write_file_atomically(trained.summary.output_dir + "/tune.json", tune_report_to_json(*trained.tuned)));
  return trained;
}

} // namespace actorpipe
