/// embed_host: an application that embeds actorpipe through its installed headers and
/// libraries. It loads a job, plans it, trains it a few steps showing progress, starts a
/// second run and cancels it from another thread, and runs a Lua script.
///
///   embed_host JOB.toml SCRIPT.lua OUTPUT_FOLDER

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/report.hpp>
#include <actorpipe/script.hpp>
#include <actorpipe/training.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

namespace {

int fail(const actorpipe::Error& error) {
  std::cerr << "embed_host: " << error.message << "\n";
  return actorpipe::exit_status(error.code);
}

} // namespace

int main(int argc, char** argv) {
  using namespace actorpipe;
  if (argc != 4) {
    std::cerr << "usage: embed_host JOB.toml SCRIPT.lua OUTPUT_FOLDER\n";
    return 2;
  }
  const std::string job_file = argv[1], script = argv[2], output = argv[3];

  // Load and plan. A zoo model without a profile is measured first, on this machine.
  auto job = load_job(job_file);
  if (!job) return fail(job.error());
  auto data = load_training_data(*job); // read once, shared by measuring and both runs
  if (!data) return fail(data.error());
  if (job->profile.blocks.empty()) {
    MeasureOptions measure;
    measure.data = *data;
    auto profile = measure_profile(*job, measure);
    if (!profile) return fail(profile.error());
    job->profile = *std::move(profile);
  }
  auto plugins = PluginRegistry::discover(PluginRegistry::default_folders());
  if (!plugins) return fail(plugins.error());
  auto plan = make_plan(*job, *plugins);
  if (!plan) return fail(plan.error());
  std::cout << format_plan(*plan, job->profile, job->cluster);

  // Train a few steps, with progress.
  RunOptions options;
  options.steps = 5;
  options.data = *data;
  options.output_dir = output + "/first";
  options.on_step = [](const StepMetrics& m) {
    std::printf("step %llu/%llu  loss %.4f  %.0f samples/s\n", static_cast<unsigned long long>(m.step),
                static_cast<unsigned long long>(m.total_steps), m.loss, m.samples_per_s);
  };
  auto first = run_training(*job, *plan, options);
  if (!first) return fail(first.error());
  std::printf("first run: %llu steps, final loss %.4f\n", static_cast<unsigned long long>(first->steps),
              first->final_loss);

  // A second run, cancelled from another thread once it has made two steps: the run
  // finishes the step in hand, writes its checkpoint and returns with `stopped` set.
  std::mutex mutex;
  std::condition_variable progressed;
  std::uint64_t steps_seen = 0;
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::unique_lock lock(mutex);
    progressed.wait(lock, [&] { return steps_seen >= 2; });
    cancel = true;
  });
  options.steps = 1000;
  options.output_dir = output + "/second";
  options.stop_requested = [&] { return cancel.load(); };
  options.on_step = [&](const StepMetrics& m) {
    std::lock_guard lock(mutex);
    steps_seen = m.step;
    progressed.notify_one();
  };
  auto second = run_training(*job, *plan, options);
  {
    // A run that failed before its second step would leave the canceller waiting.
    std::lock_guard lock(mutex);
    steps_seen = std::max<std::uint64_t>(steps_seen, 2);
    progressed.notify_one();
  }
  canceller.join();
  if (!second) return fail(second.error());
  std::printf("second run: %s after step %llu of 1000, checkpoint in %s\n", second->stopped ? "cancelled" : "finished",
              static_cast<unsigned long long>(second->steps), second->output_dir.c_str());
  if (!second->stopped) return 1;

  // A Lua script, sandboxed, writing into its own folder.
  ScriptOptions script_options;
  script_options.args = {job_file};
  script_options.output_dir = output + "/script";
  if (auto s = run_script(script, script_options); !s) return fail(s.error());
  std::printf("script ran; its files are in %s\n", script_options.output_dir.c_str());
  return 0;
}
