/// training_cuda: stages on a CUDA device, where one is present. A job on the GPU
/// computes what it computes on the CPU step by step (fp32); bf16 trains the default
/// CNN as well as fp32 does; two stages on one GPU compute at the same time on their
/// own streams; the plan's memory estimate holds against the caching allocator's peak,
/// eagerly and replaying CUDA graphs;
/// stages replaying CUDA graphs (train.cuda_graphs) compute what they compute eagerly.
/// Skipped (exit 77) where actorpipe was built without CUDA or no GPU is visible.

#define BOOST_TEST_MODULE training_cuda
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "test_support.hpp"

#include "device/stage_device.hpp"
#include "train/model_zoo.hpp"
#include "train/stage_worker.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/tensor_box.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/training.hpp>

#include <torch/torch.h>

#ifdef ACTORPIPE_CUDA
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

using namespace actorpipe;

namespace {

/// `servers` servers of one `kind` device each: a one-process run puts every
/// "SERVER/gpu0" on this machine's cuda:0, so each stage of the plan lands on it.
std::string cluster_toml(std::size_t servers, const std::string& kind) {
  std::ostringstream t;
  t << "[cluster]\nname = \"one-gpu\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n";
  for (std::size_t s = 0; s < servers; ++s)
    t << "[[cluster.servers]]\nname = \"s" << s << "\"\n"
      << "pcie = { devices_per_switch = 1, switch_bandwidth = \"16 GB/s\", inter_bridge_bandwidth = \"16 GB/s\" }\n"
      << "nic = { count = 1, bandwidth = \"10 GB/s\" }\n"
      << "devices = [{ kind = \"" << kind << "\", count = 1, speed = 1.0, memory = \"80 GiB\" }]\n";
  return t.str();
}

std::string cnn_job(const std::string& kind, std::size_t stages, std::size_t pipelines, const std::string& extra) {
  std::ostringstream t;
  t << cluster_toml(stages * pipelines, kind) << "[job]\nname = \"cuda\"\nseed = 1\n[model]\nzoo = \"cnn\"\n"
    << "[data]\ndataset = \"fashion-mnist\"\nshuffle = false\n"
    << "[train]\nbatch_size = 128\nlr = 0.05\nmomentum = 0.9\n"
    << extra << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"1f1b\"\n"
    << "sync = \"allreduce\"\nstages = " << stages << "\npipelines = " << pipelines << "\nmicro_batches = 2\n";
  return t.str();
}

} // namespace

BOOST_AUTO_TEST_CASE(a_job_on_the_gpu_equals_the_same_job_on_the_cpu_step_by_step) {
  test::ScratchDir dir;
  for (const auto& [stages, pipelines] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 1}, {2, 2}})
    BOOST_TEST_CONTEXT(stages << " stages × " << pipelines << " pipelines") {
      const test::MeasuredPlan cpu = test::quick_plan(dir, cnn_job("cpu", stages, pipelines, ""));
      const test::MeasuredPlan gpu = test::quick_plan(dir, cnn_job("H100", stages, pipelines, ""));
      BOOST_REQUIRE(cpu.plan.stages.size() == stages);
      const std::vector<double> on_cpu = train_for(cpu, 20, dir.path() / "cpu").losses;
      const std::vector<double> on_gpu = train_for(gpu, 20, dir.path() / "gpu").losses;
      BOOST_REQUIRE_EQUAL(on_gpu.size(), on_cpu.size());
      for (std::size_t k = 0; k < on_cpu.size(); ++k)
        BOOST_TEST_CONTEXT("step " << k + 1) {
          BOOST_TEST(std::abs(on_gpu[k] - on_cpu[k]) <= 1e-4 * std::abs(on_cpu[k]),
                     on_gpu[k] << " against " << on_cpu[k]);
        }
    }
}

BOOST_AUTO_TEST_CASE(bf16_trains_the_default_cnn_to_89_percent) {
  test::ScratchDir dir;
  // The default job's training (configs/fashion-mnist.toml): three epochs, the rate
  // annealed along a cosine.
  std::string job = cnn_job("H100", 2, 2, "precision = \"bf16\"\nepochs = 3\nlr_schedule = \"cosine\"\n");
  job.replace(job.find("shuffle = false"), 15, "shuffle = true");
  const test::MeasuredPlan p = test::quick_plan(dir, job);
  RunOptions options;
  options.output_dir = (dir.path() / "bf16").string();
  auto summary = run_training(p.job, p.plan, options);
  REQUIRE_OK(summary);
  BOOST_TEST_MESSAGE("bf16, 2 stages × 2 pipelines on one GPU, 3 epochs: test accuracy "
                     << summary->test_accuracy << ", " << summary->samples_per_s << " samples/s");
  BOOST_TEST(summary->test_accuracy >= 0.89);
}

namespace {

/// Two stages of `options`' model (seeded alike) on cuda:0 in `precision`, with CUDA
/// graphs or eagerly.
std::vector<std::unique_ptr<train::StageWorker>> two_stages(const ModelOptions& options, const train::DataShape& shape,
                                                            Precision precision, bool graphs) {
  auto model = train::build_model(options, shape, 7);
  REQUIRE_OK(model);
  const auto shared = std::make_shared<const train::Model>(std::move(*model));
  TrainOptions train;
  train.optimizer = Optimizer::adam;
  train.lr = 1e-3;
  train.precision = precision;
  train.cuda_graphs = graphs ? CudaGraphs::on : CudaGraphs::off;
  const Cut begin{0, 0}, half{shared->blocks.size() / 2, 0}, end{shared->blocks.size(), 0};
  std::vector<std::unique_ptr<train::StageWorker>> stages;
  for (std::size_t s = 0; s < 2; ++s)
    stages.push_back(std::make_unique<train::StageWorker>(
        shared, train::StageSetup{0, s, 2, s == 0 ? begin : half, s == 0 ? half : end, train, 1, 1, 0}));
  return stages;
}

/// Four steps of three micro-batches through `stages` in 1F1B's order (the second's
/// backward split into I and W), the last step's third micro-batch shorter: each
/// step's loss, then every parameter, flattened.
std::pair<std::vector<double>, torch::Tensor> four_steps(std::vector<std::unique_ptr<train::StageWorker>>& stages,
                                                         const std::function<torch::Tensor(std::int64_t)>& inputs,
                                                         const std::function<torch::Tensor(std::int64_t)>& labels) {
  torch::manual_seed(3);
  std::vector<double> losses;
  train::StageWorker &first = *stages[0], &last = *stages[1];
  for (int step = 0; step < 4; ++step) {
    const std::vector<std::int64_t> rows{8, 8, step == 3 ? 5 : 8};
    std::vector<train::Payload> x, y, activation(3), gradient(3);
    for (const std::int64_t r : rows) {
      x.push_back(train::wrap(inputs(r)));
      y.push_back(train::wrap(labels(r)));
    }
    const double batch = static_cast<double>(rows[0] + rows[1] + rows[2]);
    const auto loss = [&](std::size_t m) {
      last.forward_loss(m, activation[m], y[m], static_cast<double>(rows[m]) / batch,
                        static_cast<std::uint32_t>(rows[m]));
    };
    activation[0] = first.forward(0, x[0]);
    activation[1] = first.forward(1, x[1]);
    loss(0);
    gradient[0] = last.backward(0, nullptr);
    first.backward(0, gradient[0]);
    activation[2] = first.forward(2, x[2]);
    loss(1);
    gradient[1] = last.backward_input(1, nullptr);
    last.backward_weight(1);
    first.backward(1, gradient[1]);
    loss(2);
    gradient[2] = last.backward(2, nullptr);
    first.backward(2, gradient[2]);
    first.step(step + 1, 0);
    last.step(step + 1, 0);
    losses.push_back(last.take_loss_sum() / batch);
  }
  std::vector<torch::Tensor> flat;
  for (const auto& stage : stages)
    for (const torch::Tensor& p : stage->impl().parameters)
      flat.push_back(p.detach().to(torch::kCPU, torch::kFloat).flatten());
  return {losses, torch::cat(flat)};
}

} // namespace

#ifdef ACTORPIPE_CUDA

BOOST_AUTO_TEST_CASE(stages_replaying_cuda_graphs_compute_what_they_compute_eagerly) {
  // A GPT in bf16 (no buffers) and a ResNet in fp32 (BatchNorm's running statistics,
  // which the capture's eager warm-up must leave as they were); the short last
  // micro-batch computes eagerly beside the graphs.
  ModelOptions gpt, resnet;
  gpt.zoo = ZooModel::gpt;
  gpt.layers = 2;
  gpt.width = 64;
  gpt.heads = 4;
  gpt.context = 16;
  resnet.zoo = ZooModel::resnet;
  resnet.layers = 2;
  resnet.width = 8;
  const train::DataShape tokens{{16}, 50, true, {}}, images{{1, 28, 28}, 10, false, {}};
  struct Case {
    const char* name;
    ModelOptions model;
    train::DataShape shape;
    Precision precision;
  };
  for (const Case& c :
       {Case{"gpt bf16", gpt, tokens, Precision::bf16}, Case{"resnet fp32", resnet, images, Precision::fp32}})
    BOOST_TEST_CONTEXT(c.name) {
      const auto inputs = [&](std::int64_t rows) {
        return c.shape.tokens ? torch::randint(c.shape.classes, {rows, c.shape.sample[0]}, torch::kLong)
                              : torch::randn({rows, 1, 28, 28});
      };
      const auto labels = [&](std::int64_t rows) {
        return c.shape.tokens ? torch::randint(c.shape.classes, {rows, c.shape.sample[0]}, torch::kLong)
                              : torch::randint(c.shape.classes, {rows}, torch::kLong);
      };
      auto eager = two_stages(c.model, c.shape, c.precision, false);
      auto graphed = two_stages(c.model, c.shape, c.precision, true);
      const auto [eager_losses, eager_weights] = four_steps(eager, inputs, labels);
      const auto [graphed_losses, graphed_weights] = four_steps(graphed, inputs, labels);
      for (std::size_t s = 0; s < 2; ++s) {
        const train::GraphedPasses* graphs = graphed[s]->impl().graphs.get();
        BOOST_REQUIRE_MESSAGE(graphs, "stage " << s << " computed eagerly");
        BOOST_TEST(graphs->why().empty(), graphs->why());
        // The first stage holds two micro-batches at once in 1F1B's order, the last one.
        BOOST_TEST(graphs->slots() == (s == 0 ? 2u : 1u), "stage " << s);
        BOOST_TEST(!eager[s]->impl().graphs);
      }
      for (std::size_t k = 0; k < eager_losses.size(); ++k)
        BOOST_TEST(std::abs(graphed_losses[k] - eager_losses[k]) <= 1e-5 * std::abs(eager_losses[k]),
                   "step " << k + 1 << ": " << graphed_losses[k] << " against " << eager_losses[k]);
      const double apart = (graphed_weights - eager_weights).abs().max().item<double>();
      BOOST_TEST_MESSAGE(c.name << ": losses " << eager_losses.back() << " eager, " << graphed_losses.back()
                                << " graphed; weights at most " << apart << " apart");
      BOOST_TEST(apart <= 1e-5, apart);
    }
}

BOOST_AUTO_TEST_CASE(two_stages_on_one_gpu_compute_at_the_same_time) {
  // Each stage queues a kernel that spins for a fixed number of cycles on its own stream,
  // from its own thread: together they take about as long as one does alone, where one
  // stream (or a device-wide ordering) would take twice as long.
  const device::StageDevice first = device::StageDevice::cuda(0), second = device::StageDevice::cuda(0);
  const std::int64_t cycles = 200'000'000; // about 0.1 s at the H100's clocks
  const auto spin = [&](const device::StageDevice& stage) {
    const auto on = stage.enter();
    at::cuda::sleep(cycles);
    stage.settle();
  };
  spin(first); // warm-up: the kernel's first launch loads its module
  const auto timed = [](const std::function<void()>& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double alone = timed([&] { spin(first); });
  const double together = timed([&] {
    std::thread other([&] { spin(second); });
    spin(first);
    other.join();
  });
  BOOST_TEST_MESSAGE("one stage's kernel alone " << alone * 1e3 << " ms, two stages' at once " << together * 1e3
                                                 << " ms");
  BOOST_TEST(together < 1.5 * alone, together << " s for two against " << alone << " s for one");
}

BOOST_AUTO_TEST_CASE(the_plans_memory_estimate_holds_against_the_allocators_peak) {
  // Two stages of one pipeline on one GPU: the allocator's peak over a run, above what
  // it held before (what measuring the profile left), against the sum of the plan's
  // per-stage estimates (parameters, gradients and optimizer state, stashed activations
  // at the schedule's peak, the largest unit's workspace; replaying CUDA graphs, the
  // pools of each micro-batch in flight), from a profile measured on this GPU.
  // Eagerly the peak is of the bytes allocated. A graph's pool keeps its memory
  // between replays as reserved, not allocated (a run's allocated peak is then one
  // capture's), so with graphs the peak is of the bytes reserved.
  test::ScratchDir dir;
  for (const bool graphs : {false, true})
    BOOST_TEST_CONTEXT((graphs ? "CUDA graphs" : "eagerly")) {
      std::string job = cnn_job("H100", 2, 1, graphs ? "cuda_graphs = true\n" : "cuda_graphs = false\n");
      job.replace(job.find("batch_size = 128"), 16, "batch_size = 1024");
      const test::MeasuredPlan p = test::quick_plan(dir, job);
      using c10::cuda::CUDACachingAllocator::getDeviceStats;
      constexpr auto every_pool = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
      c10::cuda::CUDACachingAllocator::emptyCache();
      c10::cuda::CUDACachingAllocator::resetPeakStats(0);
      const auto before = getDeviceStats(0);
      train_for(p, 10, dir.path() / (graphs ? "memory-graphs" : "memory"));
      const auto after = getDeviceStats(0);
      const auto allocated =
          static_cast<double>(after.allocated_bytes[every_pool].peak - before.allocated_bytes[every_pool].current);
      const auto reserved =
          static_cast<double>(after.reserved_bytes[every_pool].peak - before.reserved_bytes[every_pool].current);
      const double peak = graphs ? reserved : allocated;
      BOOST_TEST(p.job.profile.reference_device.starts_with("cuda:0"), p.job.profile.reference_device);
      double predicted = 0;
      for (const StagePlan& stage : p.plan.stages)
        predicted += static_cast<double>(stage.estimate.memory_bytes);
      BOOST_TEST_MESSAGE((graphs ? "CUDA graphs: " : "eagerly: ")
                         << "peak allocated " << allocated / 1e6 << " MB, peak reserved " << reserved / 1e6
                         << " MB, predicted " << predicted / 1e6 << " MB");
      BOOST_TEST(std::abs(predicted - peak) <= 0.2 * peak, "predicted " << predicted << " B, allocator's peak " << peak
                                                                        << " B "
                                                                        << (graphs ? "reserved" : "allocated"));
    }
}

#endif

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::cout << "training_cuda: skipped: LibTorch sees no CUDA device here\n";
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
