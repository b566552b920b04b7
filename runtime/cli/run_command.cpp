/// `actorpipe run JOB.toml`: plan the job and train it with the actor runtime, showing
/// progress, evaluating after every epoch, and leaving plan.json, metrics.jsonl,
/// trace.json and a checkpoint in the run's output folder.

#include "commands.hpp"
#include "interrupt.hpp"
#include "job_arguments.hpp"
#include "seconds_option.hpp"

#include <actorpipe/launch.hpp>
#include <actorpipe/run_report.hpp>
#include <actorpipe/train_job.hpp>
#include <actorpipe/training.hpp>

#include "base/text.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <unistd.h>

namespace actorpipe::cli {

namespace {

struct RunArguments {
  JobArguments job;
  std::optional<std::uint64_t> steps;
  std::optional<std::uint32_t> epochs;
  std::string resume, output, inject_failure;
  bool json = false;
  bool no_pin = false;
  double stall_timeout = 600.0;        ///< seconds a stage may spend on one piece of its work; 0: no limit
  std::optional<LaunchOptions> launch; ///< `launch`'s; none: `run`, one process
  double heartbeat_timeout = 3.0;      ///< `--heartbeat-timeout`, seconds
};

std::string duration(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m";
  if (s >= 60) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s) + "s";
}

int run_job(const RunArguments& a, const CommonOptions& common) {
  // Before the profile is measured or the plan made: a folder to resume from holds a
  // checkpoint.
  if (!a.resume.empty()) {
    const std::string checkpoint = a.resume + "/" + checkpoint_file;
    std::error_code error;
    if (!std::filesystem::is_regular_file(checkpoint, error))
      return report(Error::bad_input("--resume " + a.resume + ": no checkpoint to continue from (" + checkpoint +
                                     " not found); nothing was measured or written"));
  }
  auto loaded = load(a.job, common);
  if (!loaded) return report(loaded.error());
  const JobSpec& job = loaded->job;
  TrainJobOptions course;
  RunOptions& options = course.run;
  options.steps = a.steps.value_or(0);
  options.epochs = a.epochs.value_or(0);
  options.resume = a.resume;
  options.pin_threads = !a.no_pin;
  options.stall_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a.stall_timeout * 1000.0));
  options.inject_failure = a.inject_failure;
  options.data = loaded->data;
  options.output_dir = !a.output.empty() ? a.output : !a.resume.empty() ? a.resume : job.output.dir;
  if (const auto at = options.output_dir.find("{job}"); at != std::string::npos)
    options.output_dir.replace(at, 5, job.job.name);
  // The job's own folder that an earlier run wrote into is left to it: this run takes
  // the first of FOLDER-2, FOLDER-3, ... that holds none, as a script's runs do. A
  // folder named with -o is the user's to write into.
  if (a.output.empty() && a.resume.empty()) {
    const auto holds_a_run = [](const std::string& folder) {
      std::error_code error;
      return std::filesystem::exists(folder + "/" + checkpoint_file, error) ||
             std::filesystem::exists(folder + "/" + metrics_file, error);
    };
    const std::string first = options.output_dir;
    for (int n = 2; holds_a_run(options.output_dir); ++n)
      options.output_dir = first + "-" + std::to_string(n);
    if (options.output_dir != first)
      std::cerr << "actorpipe: " << first << " holds an earlier run; this one writes to " << options.output_dir
                << " (-o names a folder to write into)\n";
  }
  options.stop_requested = [] { return InterruptScope::requested().load(); };
  course.on_planning = planning_progress();
  // Ctrl-C ends planning at once; from then on it asks the tuning or the run to stop at
  // the end of a step, with a checkpoint.
  std::optional<InterruptScope> interrupts;
  course.on_planned = [&](const Plan&) { interrupts.emplace(); };
  course.on_tuning = [](std::size_t candidates, std::size_t steps) {
    std::cerr << "actorpipe: tuning: running the " << candidates << " fastest shapes the simulator found for " << steps
              << " steps each\n";
  };
  course.on_setting = [](std::size_t k, std::size_t n, const TunedSetting& s) {
    std::cerr << "actorpipe: tuning: " << k << "/" << n << ": "
              << describe_shape(s.stages, s.pipelines, s.micro_batches) << ": "
              << (s.error.empty() ? text::format_fixed(s.measured_samples_per_s, 0) + " samples/s" : s.error) << "\n";
  };
  course.on_tuned = [](const TuneReport& tuned) { std::cerr << tune_report_to_text(tuned); };
  // On emulated devices a run's times are the modelled cluster's, not this machine's:
  // its samples/s says so.
  std::string rate = " samples/s";
  course.on_plan = [&](const Plan& plan, double predicted) {
    for (const auto& pipeline : plan.devices)
      for (const DeviceId d : pipeline)
        if (job.cluster.devices[d].kind == "emulated") rate = " samples/s in modelled time";
    std::cerr << "actorpipe: training '" << job.job.name
              << "': " << describe_shape(plan.stages.size(), plan.pipelines, plan.schedule.micro_batch_sizes.size())
              << ", " << plan.scheduler << "; output in " << options.output_dir << "\n";
    // Stage actors compute on this machine's cores; the plan gives each device its own.
    const std::size_t actors = plan.pipelines * plan.stages.size(), cores = usable_core_count();
    if (actors > cores)
      std::cerr << "actorpipe: " << actors << " stage actors share " << cores << (cores == 1 ? " core" : " cores")
                << ": " << text::format_fixed(predicted, 2) << " ms per step predicted here (the plan's "
                << text::format_fixed(plan.iteration_time_ms, 2) << " ms gives each a core)\n";
  };
  const bool terminal = ::isatty(STDERR_FILENO);
  std::uint64_t shown = 0;
  options.on_step = [&](const StepMetrics& m) {
    // On a terminal the line is rewritten in place; in a log, about twenty lines a run.
    const std::uint64_t every = std::max<std::uint64_t>(1, m.total_steps / 20);
    if (!terminal && m.step % every != 0 && m.step != m.total_steps) return;
    std::cerr << (terminal ? "\r" : "") << "epoch " << m.epoch << " step " << m.step << "/" << m.total_steps
              << "  loss " << text::format_fixed(m.loss, 4) << "  " << text::format_fixed(m.samples_per_s, 0) << rate
              << "  ETA " << duration(m.eta_s) << (terminal ? "   " : "\n") << std::flush;
    ++shown;
  };
  options.on_evaluation = [&](const EvaluationMetrics& e) {
    std::cerr << (terminal && shown ? "\n" : "") << "epoch " << e.epoch << ", step " << e.step << ": test accuracy "
              << text::format_fixed(100.0 * e.test_accuracy, 2) << "%, test loss " << text::format_fixed(e.test_loss, 4)
              << "\n";
  };
  // Under launch, workers on this machine run the stages while this process coordinates.
  if (a.launch) {
    course.launch = *a.launch;
    course.launch->heartbeat_timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(a.heartbeat_timeout * 1000.0));
    course.launch->job_file = a.job.job;
    course.launch->overrides = job_overrides(a.job);
  }
  auto trained = train_job(job, loaded->plugins, course);
  if (terminal && shown) std::cerr << "\n";
  if (!trained) {
    const int code = report(trained.error());
    // A tuning stopped by a signal ends as the shell reports one.
    return interrupts && InterruptScope::requested() ? 128 + InterruptScope::signal() : code;
  }
  const RunSummary& summary = trained->summary;
  if (summary.stopped)
    std::cerr << "actorpipe: interrupted; stopped after step " << summary.steps << " with a checkpoint in "
              << summary.output_dir << ": the same command with --resume " << summary.output_dir << " continues it\n";
  if (a.json) {
    std::cout << run_summary_to_json(summary, trained->predicted_step_ms, trained->plan);
  } else if (!summary.stopped) {
    std::cout << "trained " << summary.steps << " steps in " << duration(summary.seconds) << " ("
              << text::format_fixed(summary.samples_per_s, 0) << rate << "): final loss "
              << text::format_fixed(summary.final_loss, 4) << ", test accuracy "
              << text::format_fixed(100.0 * summary.test_accuracy, 2) << "%\n"
              << "median step " << text::format_fixed(summary.median_step_ms, 2) << " ms; predicted "
              << text::format_fixed(trained->predicted_step_ms, 2) << " ms\n"
              << "wrote " << summary.output_dir << "/{plan.json, metrics.jsonl, trace.json, checkpoint.pt"
              << (trained->tuned ? ", tune.json" : "") << "}\n";
  }
  return summary.stopped ? 128 + InterruptScope::signal() : 0; // as the shell reports a signal
}

} // namespace

namespace {

/// The options `run` and `launch` share.
void add_run_options(CLI::App* command, const std::shared_ptr<RunArguments>& args, CommonOptions& common) {
  add_job_arguments(*command, args->job, common);
  // Bounded like train.steps and train.epochs in a job file.
  command->add_option("--steps", args->steps, "steps to run (overrides train.steps)")
      ->check(CLI::Range(std::uint64_t{1}, max_steps));
  command->add_option("--epochs", args->epochs, "epochs to run (overrides train.epochs)")
      ->check(CLI::Range(std::uint32_t{1}, max_epochs));
  command->add_option("--resume", args->resume, "continue from the checkpoint in this run folder");
  command->add_option("-o,--output", args->output, "the run's output folder (default: output.dir)");
  command->add_flag("--json", args->json, "print a JSON summary at the end");
  command->add_flag("--no-pin", args->no_pin,
                    "leave stage threads where the operating system puts them (by default, when stage actors "
                    "outnumber the cores, pipeline neighbours are bound to a shared core)");
  command
      ->add_option("--stall-timeout", args->stall_timeout,
                   "seconds a stage may spend on one piece of its own work (a forward, a backward, an optimizer "
                   "step) before its thread counts as stuck: the run fails, or under launch its worker counts as lost "
                   "(default 600; 0: no limit)")
      ->check(seconds_from(0, 86400));
  command
      ->add_option("--inject-failure", args->inject_failure,
                   "testing aid: make stage STAGE throw in step STEP (STAGE:STEP); STAGE:STEP:stall blocks the "
                   "stage's thread there for good instead, STAGE:STEP:stall-sync in its sync round; under launch, "
                   "STAGE:STEP:exit ends the worker process "
                   "there, and STAGE:STEP:hang stops it (SIGSTOP)")
      ->group("Testing");
}

} // namespace

void add_run_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto args = std::make_shared<RunArguments>();
  auto* command = app.add_subcommand("run", run_summary);
  add_run_options(command, args, common);
  command->callback([&run, &common, args] { run = [&common, args] { return run_job(*args, common); }; });

  auto launched = std::make_shared<RunArguments>();
  LaunchOptions& l = launched->launch.emplace();
  auto* launch = app.add_subcommand("launch", launch_summary);
  add_run_options(launch, launched, common);
  launch->add_option("--nprocs", l.nprocs, "worker processes to start on this machine")
      ->required()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}));
  launch->add_option("--listen", l.listen,
                     "HOST:PORT where workers reach this coordinator (default 127.0.0.1:0, loopback, any free port)");
  launch
      ->add_option("--local-workers", l.local_workers,
                   "of the --nprocs workers, how many to start here (default: all); the others join with "
                   "`actorpipe worker` from other servers, which needs --listen HOST:PORT and the token")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1024}));
  add_tls_options(*launch, l.tls);
  launch->add_option("--token-file", l.token_file,
                     "the job's token, in a file only its owner may read (else ACTORPIPE_TOKEN; made afresh when "
                     "neither is given and every worker starts here)");
  launch
      ->add_option("--restart", l.restart,
                   "after a lost worker, start the workers again and resume from the last checkpoint, at most N "
                   "times (default 0: the run fails)")
      ->check(CLI::Range(std::uint32_t{0}, std::uint32_t{100}));
  launch
      ->add_option("--heartbeat-timeout", launched->heartbeat_timeout,
                   "seconds a worker may leave a heartbeat unanswered before it counts as lost (default 3)")
      ->check(seconds_from(0.1, 3600));
  launch
      ->add_option("--bind", l.bind,
                   "cores: each worker started here runs on an even share of this process's cores, its stage "
                   "threads bound among them (the default); none: the workers share every core")
      ->transform(CLI::CheckedTransformer(std::map<std::string, LaunchOptions::Bind>{
          {"cores", LaunchOptions::Bind::cores}, {"none", LaunchOptions::Bind::none}}));
  launch->callback([&run, &common, launched] { run = [&common, launched] { return run_job(*launched, common); }; });
}

} // namespace actorpipe::cli
