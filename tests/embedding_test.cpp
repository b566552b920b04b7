/// An application that embeds the training runtime: built against the public headers
/// alone (no LibTorch or CAF include paths), as `pkg-config actorpipe-training` gives.

#define BOOST_TEST_MODULE embedding
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "test_support.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/train_job.hpp>
#include <actorpipe/training.hpp>
#include <actorpipe/tuning.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sched.h>
#include <sys/stat.h>

using namespace actorpipe;

namespace {

std::string job_toml(const std::string& data) {
  return test::cpu_cluster_toml(2, "1 GiB") +
         "[job]\nname = \"embedded\"\n[model]\nzoo = \"mlp\"\nlayers = 2\nwidth = 16\n" + data +
         "[train]\nbatch_size = 16\n[plan]\nstages = 2\npipelines = 1\nmicro_batches = 2\n";
}

/// A small synthetic job, measured (one timed pass) and planned.
test::MeasuredPlan synthetic_plan(const test::ScratchDir& dir, const std::vector<std::string>& overrides = {}) {
  auto job = load_job(
      dir.write("job.toml", job_toml("[data]\ndataset = \"synthetic\"\nsamples = 128\nshape = [8]\nclasses = 3\n")),
      overrides);
  REQUIRE_OK(job);
  MeasureOptions measure;
  measure.repeats = 1;
  return test::measure_and_plan(*std::move(job), measure);
}

} // namespace

BOOST_AUTO_TEST_CASE(an_application_loads_measures_plans_and_trains) {
  test::ScratchDir dir;
  auto job = load_job(
      dir.write("job.toml", job_toml("[data]\ndataset = \"synthetic\"\nsamples = 128\nshape = [8]\nclasses = 3\n")));
  REQUIRE_OK(job);
  auto data = load_training_data(*job);
  REQUIRE_OK(data);
  MeasureOptions measure;
  measure.data = *data;
  measure.repeats = 1;
  const auto [measured, plan] = test::measure_and_plan(*job, measure);
  // Its 2 stage actors get a core each, unless this process has only one: then they
  // take turns on it and the step is predicted longer than the plan's.
  cpu_set_t usable;
  BOOST_REQUIRE(sched_getaffinity(0, sizeof usable, &usable) == 0);
  auto predicted = predicted_step_ms(measured, plan);
  BOOST_REQUIRE(predicted.ok());
  if (CPU_COUNT(&usable) >= 2)
    BOOST_TEST(*predicted == plan.iteration_time_ms);
  else
    BOOST_TEST(*predicted > plan.iteration_time_ms);

  RunOptions options;
  options.steps = 8;
  options.output_dir = (dir.path() / "run").string();
  options.data = *data;
  std::size_t steps_seen = 0;
  options.on_step = [&](const StepMetrics&) { ++steps_seen; };
  auto summary = run_training(measured, plan, options);
  REQUIRE_OK(summary);
  BOOST_TEST(summary->steps == 8u);
  BOOST_TEST(steps_seen == 8u);
  BOOST_TEST(std::isfinite(summary->final_loss));
  for (const char* file : {"plan.json", "metrics.jsonl", "trace.json", "checkpoint.pt"})
    BOOST_TEST(std::filesystem::exists(dir.path() / "run" / file), file);
}

BOOST_AUTO_TEST_CASE(an_application_trains_a_job_the_way_the_command_does) {
  // train_job(): planned, tuned by measurement, trained, its report kept as tune.json;
  // the callbacks at each turn, in order. Resumed, the run keeps the shape it chose.
  test::ScratchDir dir;
  const auto [job, planned] = synthetic_plan(
      dir, {"plan.tune=\"profile\"", "plan.tune_candidates=2", "plan.tune_steps=4", "plan.micro_batches=\"auto\""});
  std::vector<std::string> turns;
  TrainJobOptions course;
  course.run.steps = 3;
  course.run.output_dir = (dir.path() / "run").string();
  course.on_planned = [&](const Plan&) { turns.push_back("planned"); };
  course.on_tuning = [&](std::size_t candidates, std::size_t steps) {
    turns.push_back("tuning " + std::to_string(candidates) + " × " + std::to_string(steps));
  };
  course.on_setting = [&](std::size_t, std::size_t, const TunedSetting&) { turns.push_back("setting"); };
  course.on_tuned = [&](const TuneReport&) { turns.push_back("tuned"); };
  double predicted = 0;
  course.on_plan = [&](const Plan&, double ms) {
    turns.push_back("plan");
    predicted = ms;
  };
  auto trained = train_job(job, test::plugins(), course);
  REQUIRE_OK(trained);
  const std::vector<std::string> expected{"planned", "tuning 2 × 4", "setting", "setting", "tuned", "plan"};
  BOOST_TEST(turns == expected, boost::test_tools::per_element());
  BOOST_TEST(trained->summary.steps == 3u);
  BOOST_TEST(predicted > 0);
  BOOST_TEST(trained->predicted_step_ms == predicted);
  BOOST_REQUIRE(trained->tuned.has_value());
  const TunedSetting& chosen = trained->tuned->tried.at(trained->tuned->chosen);
  BOOST_TEST(trained->plan.schedule.micro_batch_sizes.size() == chosen.micro_batches);
  std::ifstream file(dir.path() / "run" / "tune.json");
  BOOST_REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  auto kept = tune_report_from_json(text.str());
  REQUIRE_OK(kept);
  BOOST_TEST(kept->chosen == trained->tuned->chosen);

  turns.clear();
  course.run.steps = 5;
  course.run.resume = course.run.output_dir;
  auto resumed = train_job(job, test::plugins(), course);
  REQUIRE_OK(resumed);
  const std::vector<std::string> without_tuning{"planned", "plan"};
  BOOST_TEST(turns == without_tuning, boost::test_tools::per_element());
  BOOST_TEST(resumed->summary.steps == 5u);
  BOOST_REQUIRE(resumed->tuned.has_value());
  BOOST_TEST(resumed->plan.schedule.micro_batch_sizes.size() == chosen.micro_batches);
}

BOOST_AUTO_TEST_CASE(missing_data_is_bad_input_for_an_application_too) {
  test::ScratchDir dir;
  auto job = load_job(dir.write("job.toml", job_toml("[data]\ndataset = \"text\"\npath = \"no-such.txt\"\n")));
  BOOST_REQUIRE(job.ok());
  auto data = load_training_data(*job);
  BOOST_REQUIRE(!data.ok());
  BOOST_TEST(exit_status(data.error().code) == 2); // bad input
  BOOST_TEST(data.error().message.find("no-such.txt: file not found") != std::string::npos, data.error().message);
}

BOOST_AUTO_TEST_CASE(a_diverging_run_stops_at_the_step_whose_loss_is_not_finite) {
  test::ScratchDir dir;
  const auto [measured, plan] = synthetic_plan(dir, {"train.lr=1e30"});
  RunOptions options;
  options.steps = 8;
  options.output_dir = (dir.path() / "run").string();
  std::uint64_t last_step = 0;
  options.on_step = [&](const StepMetrics& m) { last_step = m.step; };
  auto summary = run_training(measured, plan, options);
  BOOST_REQUIRE(!summary.ok());
  BOOST_TEST(exit_status(summary.error().code) == 1);
  BOOST_TEST(
      test::contains(summary.error().message, "step " + std::to_string(last_step + 1) + ": the training loss is"),
      summary.error().message);
  BOOST_TEST(last_step < 8u);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "run" / "checkpoint.pt"));
}

BOOST_AUTO_TEST_CASE(data_that_is_not_a_regular_file_is_refused_without_blocking) {
  test::ScratchDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto job = load_job(dir.write("job.toml", job_toml("[data]\ndataset = \"text\"\npath = \"fifo\"\n")));
  REQUIRE_OK(job);
  auto data = load_training_data(*job);
  BOOST_REQUIRE(!data.ok());
  BOOST_TEST(test::contains(data.error().message, "fifo: is a FIFO, not a regular file"), data.error().message);
  auto folder = load_job(dir.path().string());
  BOOST_REQUIRE(!folder.ok());
  BOOST_TEST(test::contains(folder.error().message, ": is a folder, not a file"), folder.error().message);
}

BOOST_AUTO_TEST_CASE(what_libtorch_cannot_do_is_an_error_before_it_tries) {
  test::ScratchDir dir;
  const std::string job = dir.write("job.toml", job_toml("[data]\ndataset = \"synthetic\"\nsamples = 128\nshape = [8]\n"
                                                         "classes = 3\n"));
  auto message = [](const auto& result) { return result.ok() ? std::string("ok") : result.error().message; };
  // More data than memory holds: LibTorch would abort on the allocation.
  auto huge = load_job(job, {"data.samples=1000000000", "data.shape=[100000]"});
  REQUIRE_OK(huge);
  const std::string too_much = message(load_training_data(*huge));
  BOOST_TEST(test::contains(too_much, "--set data.samples=1000000000: data.samples: 1000000000 samples of 100000 "
                                      "features"),
             too_much);
  BOOST_TEST(test::contains(too_much, "more than half this machine's"), too_much);
  // Images too small for the CNN's pooling: found by a dry run, not in the first step.
  auto tiny = load_job(job, {"model.zoo=cnn", "data.shape=[1, 1, 1]"});
  REQUIRE_OK(tiny);
  const std::string too_small = message(measure_profile(*tiny, {}));
  BOOST_TEST(test::contains(too_small, "--set model.zoo=cnn: model.zoo: 'cnn' "), too_small);
  BOOST_TEST(test::contains(too_small, " samples of 1 × 1 × 1: "), too_small);
}

BOOST_AUTO_TEST_CASE(a_throwing_callback_ends_the_run_with_an_error_not_a_hang) {
  test::ScratchDir dir;
  const auto [measured, plan] = synthetic_plan(dir);
  RunOptions options;
  options.steps = 6;
  options.output_dir = (dir.path() / "run").string();
  options.on_step = [](const StepMetrics& m) {
    if (m.step == 2) throw std::runtime_error("the host's callback failed");
  };
  auto summary = run_training(measured, plan, options);
  BOOST_REQUIRE(!summary.ok());
  BOOST_TEST(summary.error().message == "run: the host's callback failed", summary.error().message);

  // A checkpoint is no TorchScript module.
  options.on_step = nullptr;
  options.steps = 2;
  REQUIRE_OK(run_training(measured, plan, options));
  auto scripted = load_job(dir.write("scripted.toml", job_toml("[data]\ndataset = \"synthetic\"\nsamples = 128\n"
                                                               "shape = [8]\nclasses = 3\n")),
                           {"model.zoo=torchscript", "model.file=" + options.output_dir + "/checkpoint.pt"});
  REQUIRE_OK(scripted);
  auto profile = measure_profile(*scripted, {});
  BOOST_REQUIRE(!profile.ok());
  BOOST_TEST(exit_status(profile.error().code) == 2);
  BOOST_TEST(test::contains(profile.error().message, "checkpoint.pt: "), profile.error().message);
}
