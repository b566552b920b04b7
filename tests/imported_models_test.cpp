/// Models users bring as TorchScript: a scripted nn.Sequential trains as PyTorch eager
/// does, step for step (tests/fixtures/write_fixtures.py wrote the model and eager's
/// losses), also where its first stage has no parameters; BatchNorm's buffers agree across pipelines, are checkpointed
/// and used at evaluation; modules that cannot be cut are refused naming the file.

#define BOOST_TEST_MODULE imported_models
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "test_support.hpp"

#include <actorpipe/training.hpp>

#include "train/model_zoo.hpp"
#include "train/replica_sync.hpp"
#include "train/session.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/tensor_box.hpp"

#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace actorpipe;

namespace {

std::string fixture(const std::string& name) { return (test::source_root() / "tests/fixtures" / name).string(); }

/// A job training the TorchScript module `file` on eight CPU "devices"; `data` and
/// `train` are TOML tables.
std::string job_toml(const std::string& file, const std::string& data, const std::string& train, std::size_t stages,
                     std::size_t pipelines, const std::string& scheduler = "1f1b") {
  std::ostringstream t;
  t << test::cpu_cluster_toml(8, "4 GiB") << "[job]\nname = \"imported\"\nseed = 7\n"
    << "[model]\nzoo = \"torchscript\"\nfile = \"" << file << "\"\n"
    << data << train << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"" << scheduler
    << "\"\n"
    << "stages = " << stages << "\npipelines = " << pipelines << "\nmicro_batches = 4\n";
  return t.str();
}

const std::string fashion_mnist_in_order = "[data]\ndataset = \"fashion-mnist\"\nshuffle = false\n";

/// The settings and losses tests/fixtures/write_fixtures.py wrote into `name`: a header
/// line "# batch_size = 32, lr = 0.05, momentum = 0.9, steps = 12" (SGD unless it names
/// an optimizer), then a loss per line.
struct EagerLosses {
  std::string train_toml;
  std::vector<double> losses;
};

EagerLosses eager_losses(const std::string& name = "conv-mlp-losses.txt") {
  std::ifstream in(fixture(name));
  BOOST_REQUIRE_MESSAGE(in, "tests/fixtures/" << name << " is missing");
  EagerLosses e;
  std::string header;
  std::getline(in, header);
  std::string settings = header.substr(2, header.find(", steps") - 2);
  for (std::size_t at; (at = settings.find(", ")) != std::string::npos;)
    settings.replace(at, 2, "\n");
  e.train_toml = "[train]\n" +
                 std::string(settings.find("optimizer") == std::string::npos ? "optimizer = \"sgd\"\n" : "") +
                 settings + "\n";
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') e.losses.push_back(std::stod(line));
  return e;
}

/// A run's losses are PyTorch eager's, step for step, to 1e-5.
void expect_eager_losses(const std::vector<double>& losses, const EagerLosses& eager) {
  BOOST_REQUIRE_EQUAL(losses.size(), eager.losses.size());
  for (std::size_t k = 0; k < losses.size(); ++k)
    BOOST_TEST_CONTEXT("step " << k + 1) { BOOST_TEST(std::abs(losses[k] - eager.losses[k]) <= 1e-5); }
}

/// Fresh replicas of `file`'s model as one stage each, as a run makes them.
struct Replicas {
  std::vector<std::unique_ptr<train::StageWorker>> workers;
  std::vector<train::StageWorker*> pointers;
};

Replicas replicas_of(const std::string& file, const train::DataShape& shape, std::size_t count) {
  Replicas r;
  ModelOptions options;
  options.zoo = ZooModel::torchscript;
  options.file = file;
  for (std::size_t p = 0; p < count; ++p) {
    auto model = train::build_model(options, shape, 7);
    REQUIRE_OK(model);
    const auto shared = std::make_shared<const train::Model>(std::move(*model));
    train::StageSetup setup{p, 0, 1, {0, 0}, {shared->blocks.size(), 0}, TrainOptions{}, 1};
    r.workers.push_back(std::make_unique<train::StageWorker>(shared, setup));
    r.pointers.push_back(r.workers.back().get());
  }
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_scripted_sequential_matches_pytorch_eager_step_for_step) {
  // Gradients summed over micro-batches and pipelines, each loss scaled by its share of
  // the batch, must be the whole batch's mean gradient: eager PyTorch's step.
  const EagerLosses eager = eager_losses();
  BOOST_REQUIRE_GE(eager.losses.size(), 8u);
  test::ScratchDir dir;
  // Split backwards too (zb-h1, zb-h2): I and W found on TorchScript's autograd graph;
  // chunks, two per device (interleaved-1f1b, zbv); at 2 and 4 devices, 1 and 2
  // pipelines; and the forward made again in the backward (recompute).
  for (const auto& [stages, pipelines, scheduler, recompute] :
       {std::tuple<std::size_t, std::size_t, const char*, const char*>{1, 1, "1f1b", "none"},
        {2, 1, "1f1b", "none"},
        {2, 2, "1f1b", "none"},
        {2, 1, "zb-h1", "none"},
        {2, 2, "zb-h1", "none"},
        {4, 1, "zb-h1", "full"},
        {2, 1, "zb-h2", "full"},
        {2, 2, "zb-h2", "none"},
        {4, 2, "zb-h2", "none"},
        {2, 1, "interleaved-1f1b", "none"},
        {2, 2, "interleaved-1f1b", "full"},
        {4, 1, "interleaved-1f1b", "none"},
        {2, 1, "zbv", "full"},
        {2, 2, "zbv", "none"},
        {4, 2, "zbv", "none"}})
    BOOST_TEST_CONTEXT(stages << " stages × " << pipelines << " pipelines, " << scheduler << ", recompute "
                              << recompute) {
      const test::MeasuredPlan p = test::quick_plan(dir, job_toml(fixture("conv-mlp.pt"), fashion_mnist_in_order,
                                                                  eager.train_toml, stages, pipelines, scheduler) +
                                                             "recompute = \"" + recompute + "\"\n");
      BOOST_REQUIRE_EQUAL(p.plan.stages.size(), stages * p.plan.schedule.chunks);
      expect_eager_losses(train_for(p, eager.losses.size(), dir.path() / "run").losses, eager);
    }
}

BOOST_AUTO_TEST_CASE(adamw_matches_pytorch_eager_step_for_step) {
  // torch.optim.AdamW's decoupled weight decay, from the same weights as the SGD parity
  // test: one stage, stages, replicas and a split backward all take PyTorch's steps.
  const EagerLosses eager = eager_losses("conv-mlp-adamw-losses.txt");
  BOOST_REQUIRE_GE(eager.losses.size(), 8u);
  BOOST_REQUIRE(test::contains(eager.train_toml, "optimizer = \"adamw\""));
  test::ScratchDir dir;
  for (const auto& [stages, pipelines, scheduler] : {std::tuple<std::size_t, std::size_t, const char*>{1, 1, "1f1b"},
                                                     {2, 1, "1f1b"},
                                                     {2, 2, "1f1b"},
                                                     {2, 2, "zb-h1"}})
    BOOST_TEST_CONTEXT(stages << " stages × " << pipelines << " pipelines, " << scheduler) {
      const test::MeasuredPlan p = test::quick_plan(dir, job_toml(fixture("conv-mlp.pt"), fashion_mnist_in_order,
                                                                  eager.train_toml, stages, pipelines, scheduler));
      expect_eager_losses(train_for(p, eager.losses.size(), dir.path() / "run").losses, eager);
    }
}

BOOST_AUTO_TEST_CASE(a_cosine_schedule_with_warm_up_and_global_norm_clipping_match_pytorch_over_30_steps) {
  // PyTorch's LinearLR then CosineAnnealingLR (SequentialLR) and clip_grad_norm_ over
  // every parameter: the stages of a pipeline agree on one norm, of the pipelines'
  // reduced gradient, under whole and split backwards and with chunks.
  const EagerLosses eager = eager_losses("conv-mlp-schedule-losses.txt");
  BOOST_REQUIRE_EQUAL(eager.losses.size(), 30u);
  BOOST_REQUIRE(test::contains(eager.train_toml, "lr_schedule = \"cosine\""));
  BOOST_REQUIRE(test::contains(eager.train_toml, "clip_norm = 1.0"));
  test::ScratchDir dir;
  const auto losses = [&](const std::string& train, std::size_t stages, std::size_t pipelines, const char* scheduler) {
    const test::MeasuredPlan p = test::quick_plan(
        dir, job_toml(fixture("conv-mlp.pt"), fashion_mnist_in_order, train, stages, pipelines, scheduler));
    return train_for(p, eager.losses.size(), dir.path() / "run").losses;
  };
  const auto largest_gap = [&](const std::vector<double>& losses) {
    double gap = 0;
    for (std::size_t k = 0; k < losses.size(); ++k)
      gap = std::max(gap, std::abs(losses[k] - eager.losses[k]));
    return gap;
  };
  for (const auto& [stages, pipelines, scheduler] : {std::tuple<std::size_t, std::size_t, const char*>{1, 1, "1f1b"},
                                                     {2, 1, "1f1b"},
                                                     {2, 2, "1f1b"},
                                                     {2, 2, "zb-h1"},
                                                     {2, 1, "interleaved-1f1b"}})
    BOOST_TEST_CONTEXT(stages << " stages × " << pipelines << " pipelines, " << scheduler) {
      expect_eager_losses(losses(eager.train_toml, stages, pipelines, scheduler), eager);
    }
  // Each setting matters: without the clipping, or with the learning rate constant,
  // the same run leaves PyTorch's losses.
  std::string unclipped = eager.train_toml, constant = eager.train_toml;
  unclipped.replace(unclipped.find("clip_norm = 1.0"), 15, "clip_norm = 0.0");
  constant.replace(constant.find("lr_schedule = \"cosine\""), 22, "lr_schedule = \"constant\"");
  BOOST_TEST(largest_gap(losses(unclipped, 2, 1, "1f1b")) > 1e-3);
  BOOST_TEST(largest_gap(losses(constant, 2, 1, "1f1b")) > 1e-3);
}

BOOST_AUTO_TEST_CASE(a_gpt_written_with_a_module_list_trains_on_a_token_file_and_exports_what_pytorch_predicts_alike) {
  // docs/models.md's worked example at a test's size: an embedding, an nn.ModuleList of
  // layers and a head, scripted; a uint16 token file; 2 stages cut inside the list.
  test::ScratchDir dir;
  std::string tokens;
  const std::string text = "pipelines of stages pass micro-batches forward and gradients back. ";
  for (std::size_t i = 0; tokens.size() < 2 * 6000; ++i) {
    const auto id = static_cast<std::uint16_t>(static_cast<unsigned char>(text[i % text.size()]) % 64);
    tokens.push_back(static_cast<char>(id & 0xff));
    tokens.push_back(static_cast<char>(id >> 8));
  }
  const std::string token_file = dir.write("tokens.bin", tokens);
  const std::string job = dir.write(
      "gpt.toml", test::cpu_cluster_toml(2, "4 GiB") + "[model]\nzoo = \"torchscript\"\nfile = \"" +
                      fixture("tiny-gpt.pt") + "\"\ncontext = 16\n[data]\ndataset = \"tokens\"\npath = \"" +
                      token_file + "\"\nvocabulary = 64\n[train]\nbatch_size = 16\noptimizer = \"adamw\"\n" +
                      "lr = 0.01\nweight_decay = 0.01\nclip_norm = 1.0\n" +
                      "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nstages = 2\npipelines = 1\n");
  const std::string run_dir = (dir.path() / "run").string();
  const auto run = test::run_cli("run " + job + " --steps 30 --json -o " + run_dir);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  // Its blocks are the list's layers between the embedding and the head.
  ModelOptions options;
  options.zoo = ZooModel::torchscript;
  options.file = fixture("tiny-gpt.pt");
  auto model = train::build_model(options, train::DataShape{}, 0);
  REQUIRE_OK(model);
  std::vector<std::string> blocks;
  for (const train::ModelBlock& block : model->blocks)
    blocks.push_back(block.name);
  BOOST_TEST(blocks == (std::vector<std::string>{"embed", "layers.0", "layers.1", "head"}),
             boost::test_tools::per_element());
  const auto summary = nlohmann::json::parse(run.out);
  const double test_loss = summary["test_loss"].get<double>(), test_accuracy = summary["test_accuracy"].get<double>();
  BOOST_TEST(test_loss < std::log(64.0) - 0.5); // it learnt something of the text

  const std::string exported = (dir.path() / "trained.pt").string();
  const auto written = test::run_cli("export " + run_dir + " -o " + exported);
  BOOST_REQUIRE_MESSAGE(written.status == 0, written.err);
  BOOST_TEST(test::contains(written.out, "as trained to step 30"), written.out);
  BOOST_REQUIRE(std::filesystem::exists(exported));
  BOOST_REQUIRE(std::filesystem::exists(dir.path() / "trained.state_dict.pt"));

  // PyTorch's predictions from the export are actorpipe's.
  const char* python = std::getenv("ACTORPIPE_PYTHON");
  BOOST_REQUIRE_MESSAGE(python && *python, "ACTORPIPE_PYTHON names no python3 with torch");
  const auto checked = test::run_command(
      std::string(python) + " " + (test::source_root() / "tests/export_check.py").string() + " " + exported + " " +
      (dir.path() / "trained.state_dict.pt").string() + " " + fixture("tiny-gpt.pt") + " " + token_file + " 16");
  BOOST_REQUIRE_MESSAGE(checked.status == 0, checked.err);
  const auto pytorch = nlohmann::json::parse(checked.out);
  BOOST_TEST(std::abs(pytorch["test_loss"].get<double>() - test_loss) <= 1e-5);
  BOOST_TEST(std::abs(pytorch["test_accuracy"].get<double>() - test_accuracy) <= 1e-9);
  BOOST_TEST(pytorch["names_match"].get<bool>());
  BOOST_TEST(pytorch["state_dict_apart"].get<double>() == 0.0);

  // An export needs a run of an imported model, and the very file it trained.
  const auto no_run = test::run_cli("export " + (dir.path() / "nowhere").string() + " -o " + exported);
  BOOST_TEST(no_run.status == 2, no_run.err);
  BOOST_TEST(test::contains(no_run.err, "no model.json: only a run of an imported TorchScript model"), no_run.err);
}

BOOST_AUTO_TEST_CASE(a_first_stage_without_parameters_trains_as_one_stage_does) {
  // Flatten, then Linear, cut in two: the first stage has nothing to learn and no stage
  // before it, so its output needs no gradient. Its backward has nothing to do, and the
  // run trains as one stage does, under whole and split backwards, with replicas too.
  test::ScratchDir dir;
  const std::string train = "[train]\noptimizer = \"sgd\"\nbatch_size = 32\nlr = 0.05\nmomentum = 0.9\n";
  auto losses = [&](std::size_t stages, std::size_t pipelines, const char* scheduler) {
    const test::MeasuredPlan p = test::quick_plan(
        dir, job_toml(fixture("flatten-linear.pt"), fashion_mnist_in_order, train, stages, pipelines, scheduler));
    BOOST_REQUIRE_EQUAL(p.plan.stages.size(), stages);
    return train_for(p, 6, dir.path() / "run").losses;
  };
  const std::vector<double> alone = losses(1, 1, "1f1b");
  BOOST_REQUIRE_EQUAL(alone.size(), 6u);
  for (const auto& [stages, pipelines, scheduler] :
       {std::tuple<std::size_t, std::size_t, const char*>{2, 1, "1f1b"}, {2, 2, "1f1b"}, {2, 1, "zb-h1"}})
    BOOST_TEST_CONTEXT(stages << " stages × " << pipelines << " pipelines, " << scheduler) {
      const std::vector<double> cut = losses(stages, pipelines, scheduler);
      BOOST_REQUIRE_EQUAL(cut.size(), alone.size());
      for (std::size_t k = 0; k < cut.size(); ++k)
        BOOST_TEST_CONTEXT("step " << k + 1) { BOOST_TEST(std::abs(cut[k] - alone[k]) <= 1e-6); }
    }
}

BOOST_AUTO_TEST_CASE(buffers_are_broadcast_from_the_first_replica_or_averaged) {
  const train::DataShape shape{{1, 28, 28}, 10, false, {}};
  torch::manual_seed(3);
  const torch::Tensor a = torch::randn({8, 1, 28, 28}), b = torch::randn({8, 1, 28, 28}) * 2 + 1;
  for (const BufferSync how : {BufferSync::broadcast, BufferSync::average})
    BOOST_TEST_CONTEXT(option_name(how)) {
      Replicas r = replicas_of(fixture("lenet-bn.pt"), shape, 2);
      const std::vector<torch::Tensor>& first = r.workers[0]->impl().buffers;
      const std::vector<torch::Tensor>& second = r.workers[1]->impl().buffers;
      BOOST_REQUIRE_EQUAL(first.size(), 6u); // two BatchNorms: mean, variance, batches seen
      // Each replica's running statistics follow its own micro-batches.
      r.workers[0]->forward(0, train::wrap(a));
      r.workers[1]->forward(0, train::wrap(b));
      std::vector<torch::Tensor> expected;
      for (std::size_t i = 0; i < first.size(); ++i) {
        BOOST_TEST(!first[i].equal(second[i]) == first[i].is_floating_point());
        expected.push_back(how == BufferSync::average && first[i].is_floating_point() ? (first[i] + second[i]) / 2
                                                                                      : first[i].clone());
      }
      train::agree_buffers(r.pointers, how);
      for (std::size_t i = 0; i < first.size(); ++i) {
        BOOST_TEST(torch::allclose(first[i], expected[i]));
        BOOST_TEST(second[i].equal(first[i]));
      }
    }
}

BOOST_AUTO_TEST_CASE(buffers_are_checkpointed_and_used_at_evaluation) {
  test::ScratchDir dir;
  const test::MeasuredPlan p =
      test::quick_plan(dir, job_toml(fixture("lenet-bn.pt"), "[data]\ndataset = \"fashion-mnist\"\n",
                                     "[train]\nbatch_size = 32\nlr = 0.05\nmomentum = 0.9\n", 2, 2));
  const RunSummary summary = train_for(p, 20, dir.path() / "run").summary;
  // A fresh session of the same job evaluates as the run did after loading its
  // checkpoint, and not before: the running statistics came with it.
  auto session = train::Session::open(p.job, p.plan);
  REQUIRE_OK(session);
  const double before = (*session)->evaluate().loss;
  REQUIRE_OK((*session)->load_checkpoint(summary.output_dir + "/checkpoint.pt"));
  const train::Evaluation after = (*session)->evaluate();
  BOOST_TEST(after.loss == summary.test_loss, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(after.accuracy == summary.test_accuracy, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::abs(before - after.loss) > 1e-3);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& second = (*session)->worker(1, s).impl().buffers;
    const auto& first = (*session)->worker(0, s).impl().buffers;
    for (std::size_t i = 0; i < second.size(); ++i)
      BOOST_TEST(second[i].equal(first[i]));
  }
}

BOOST_AUTO_TEST_CASE(a_run_with_dropout_repeats_exactly) {
  // Four stage actors draw dropout masks from the CPU's one default generator, in turns that
  // vary from run to run; each draw is seeded from the replica and the forward.
  test::ScratchDir dir;
  const test::MeasuredPlan p =
      test::quick_plan(dir, job_toml(fixture("lenet-bn.pt"), "[data]\ndataset = \"fashion-mnist\"\n",
                                     "[train]\nbatch_size = 32\nlr = 0.05\n", 2, 2));
  const std::vector<double> first = train_for(p, 12, dir.path() / "run0").losses;
  const std::vector<double> second = train_for(p, 12, dir.path() / "run1").losses;
  BOOST_TEST(first == second, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(batchnorm_trained_as_2_by_2_evaluates_within_two_points_of_1_by_1) {
  // The same samples in the same order: 2 stages × 2 pipelines compute BatchNorm's
  // statistics over micro-batches of 16 instead of batches of 128, and broadcast the
  // first pipeline's running statistics after each step; dropout draws other masks.
  // Those differences alone move the accuracy by about a point either way (LibTorch
  // 2.11: 2 × 2 ahead by 1.0 point after 200 steps, behind by 1.1 after 400); running
  // statistics that did not agree would cost far more.
  test::ScratchDir dir;
  std::map<std::size_t, double> accuracy;
  for (const std::size_t n : {1, 2}) {
    const test::MeasuredPlan p =
        test::quick_plan(dir, job_toml(fixture("lenet-bn.pt"), "[data]\ndataset = \"fashion-mnist\"\n",
                                       "[train]\nbatch_size = 128\nlr = 0.05\nmomentum = 0.9\n", n, n));
    accuracy[n] = train_for(p, 200, dir.path() / ("run" + std::to_string(n))).summary.test_accuracy;
  }
  BOOST_TEST_MESSAGE("test accuracy 1 × 1: " << accuracy[1] << ", 2 × 2: " << accuracy[2]);
  BOOST_TEST(accuracy[1] > 0.75);
  BOOST_TEST(std::abs(accuracy[2] - accuracy[1]) <= 0.02);
}

BOOST_AUTO_TEST_CASE(modules_that_cannot_be_cut_are_refused_naming_the_file) {
  test::ScratchDir dir;
  const std::string data = "[data]\ndataset = \"synthetic\"\nsamples = 64\nshape = [12]\nclasses = 12\n";
  const std::string train = "[train]\nbatch_size = 16\n";
  auto refusal = [&](const std::string& file) {
    auto job = load_job(dir.write("job.toml", job_toml(file, data, train, 1, 1)));
    REQUIRE_OK(job);
    auto profile = measure_profile(*job, {});
    BOOST_REQUIRE(!profile.ok());
    BOOST_TEST(exit_status(profile.error().code) == 2);
    return profile.error().message;
  };
  auto linear = [](const std::string& name) {
    torch::jit::Module m(name);
    m.register_parameter("weight", torch::randn({12, 12}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.relu(torch.matmul(x, self.weight.t()))\n");
    return m;
  };

  // Children called in another order than they were registered in.
  torch::jit::Module swapped("Swapped");
  swapped.register_module("first", linear("A"));
  swapped.register_module("second", linear("B"));
  swapped.define("def forward(self, x):\n  return self.first.forward(self.second.forward(x))\n");
  const std::string swapped_file = (dir.path() / "swapped.pt").string();
  swapped.save(swapped_file);
  std::string message = refusal(swapped_file);
  BOOST_TEST(test::contains(message, swapped_file + ": its forward is not its children called in order"), message);
  BOOST_TEST(test::contains(message, "torch.jit.script(nn.Sequential(...))"), message);

  // An output of another width than the data's classes.
  torch::jit::Module narrow("Narrow");
  narrow.register_module("only", linear("A"));
  narrow.define("def forward(self, x):\n  return self.only.forward(x)\n");
  const std::string narrow_file = (dir.path() / "narrow.pt").string();
  narrow.save(narrow_file);
  const std::string wide_data = "[data]\ndataset = \"synthetic\"\nsamples = 64\nshape = [12]\nclasses = 5\n";
  auto job = load_job(dir.write("wide.toml", job_toml(narrow_file, wide_data, train, 1, 1)));
  REQUIRE_OK(job);
  auto profile = measure_profile(*job, {});
  BOOST_REQUIRE(!profile.ok());
  BOOST_TEST(test::contains(profile.error().message, "not 5 logits per sample (data.classes)"),
             profile.error().message);

  // A checkpoint of a run.
  const test::MeasuredPlan p = test::quick_plan(dir, job_toml(narrow_file, data, train, 1, 1));
  message = refusal(train_for(p, 1, dir.path() / "run").summary.output_dir + "/checkpoint.pt");
  BOOST_TEST(test::contains(message, "checkpoint.pt: an actorpipe checkpoint, not a model: resume a run from it "
                                     "with --resume"),
             message);
}

BOOST_AUTO_TEST_CASE(the_worked_example_of_docs_models_trains) {
  auto job = load_job((test::source_root() / "configs/fashion-mnist-torchscript.toml").string());
  REQUIRE_OK(job);
  const test::MeasuredPlan p = test::quick_plan(*std::move(job));
  BOOST_TEST(p.plan.stages.size() == 2u);
  BOOST_TEST(p.plan.pipelines == 2u);
  test::ScratchDir dir;
  const test::TrainedRun t = train_for(p, 30, dir.path() / "run");
  BOOST_TEST(t.losses.back() < 0.7 * t.losses.front());
  BOOST_TEST(t.summary.test_accuracy > 0.5);
}
