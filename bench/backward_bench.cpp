/// What a stage's backward costs whole (B), split in two (I, then W: zero-bubble
/// schedules) and recomputed (plan.recompute = "full"), on the CPU: the transformer
/// layers of the GPT zoo model and the hidden layers of the MLP as a middle stage (its
/// input needs a gradient). Split, the two halves should cost about what B costs:
/// the W runs from the nodes where the input's path meets the weights, not from the
/// output again. Recomputed, the backward costs a forward more, split or not (the I
/// keeps the graph it made again for the W).
///   build/bench/backward_bench [--threads N]

#include "base/text.hpp"
#include "base/text_table.hpp"
#include "train/model_zoo.hpp"
#include "train/stage_worker.hpp"
#include "train/tensor_box.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace actorpipe;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double forward = 0, whole = 0, input = 0, weight = 0;
};

/// Medians over `repeats` micro-batches of a middle stage over blocks [first, last) of
/// `model`, fed `input`, its output's gradient `gradient`.
Timing time_stage(const std::shared_ptr<const train::Model>& model, std::size_t first, std::size_t last,
                  const torch::Tensor& input, const torch::Tensor& gradient, bool recompute, int threads) {
  train::StageSetup setup{0, 1, 3, {first, 0}, {last, 0}, TrainOptions{}, threads, 1};
  if (recompute) setup.recomputed.assign(model->units(setup.begin, setup.end).size(), true);
  train::StageWorker worker(model, setup);
  const train::Payload in = train::wrap(input), grad = train::wrap(gradient);
  std::vector<double> forward, whole, split_input, split_weight;
  constexpr int repeats = 9, warmup = 2;
  for (int k = 0; k < warmup + repeats; ++k) {
    for (const bool split : {false, true}) {
      auto start = Clock::now();
      (void)worker.forward(static_cast<std::size_t>(k), in);
      const double f = ms_since(start);
      if (!split) {
        start = Clock::now();
        (void)worker.backward(static_cast<std::size_t>(k), grad);
        if (k >= warmup) {
          forward.push_back(f);
          whole.push_back(ms_since(start));
        }
      } else {
        start = Clock::now();
        (void)worker.backward_input(static_cast<std::size_t>(k), grad);
        const double i = ms_since(start);
        start = Clock::now();
        worker.backward_weight(static_cast<std::size_t>(k));
        if (k >= warmup) {
          split_input.push_back(i);
          split_weight.push_back(ms_since(start));
        }
      }
    }
    worker.step(1, 0);
  }
  return {median(forward), median(whole), median(split_input), median(split_weight)};
}

} // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::max(1, std::atoi(argv[i + 1]));
  torch::manual_seed(1);
  struct Case {
    std::string name;
    ModelOptions options;
    train::DataShape shape;
    std::int64_t batch;
  };
  ModelOptions gpt;
  gpt.zoo = ZooModel::gpt;
  gpt.layers = 4;
  gpt.width = 256;
  gpt.context = 128;
  ModelOptions mlp;
  mlp.zoo = ZooModel::mlp;
  mlp.layers = 6;
  mlp.width = 1024;
  const std::vector<Case> cases = {{"gpt: 4 layers, width 256, context 128, 8 samples", gpt, {{128}, 256, true, {}}, 8},
                                   {"mlp: 6 layers of 1024, 256 samples", mlp, {{784}, 10, false, {}}, 256}};
  text::Table table({{"stage"},
                     {"F ms", text::Table::Align::right},
                     {"B ms", text::Table::Align::right},
                     {"I ms", text::Table::Align::right},
                     {"W ms", text::Table::Align::right},
                     {"(I + W) / B", text::Table::Align::right},
                     {"recomputed B ms", text::Table::Align::right},
                     {"recomputed B / B", text::Table::Align::right},
                     {"recomputed (I + W) / B", text::Table::Align::right},
                     {"its F / F", text::Table::Align::right}});
  for (const Case& c : cases) {
    auto built = train::build_model(c.options, c.shape, 1);
    if (!built) {
      std::fprintf(stderr, "backward_bench: %s\n", built.error().message.c_str());
      return 1;
    }
    const auto model = std::make_shared<const train::Model>(std::move(*built));
    // The middle of the model: past its input layer, before its head.
    const std::size_t first = 1, last = model->blocks.size() - 1;
    torch::Tensor probe;
    {
      torch::NoGradGuard no_grad;
      std::vector<std::int64_t> sample{c.batch};
      sample.insert(sample.end(), c.shape.sample.begin(), c.shape.sample.end());
      probe = c.shape.tokens ? torch::randint(c.shape.classes, sample, torch::kLong) : torch::randn(sample);
      for (const train::ModelUnit* u : model->units({0, 0}, {first, 0}))
        probe = u->forward(probe);
    }
    const torch::Tensor input = torch::randn(probe.sizes());
    torch::Tensor output;
    {
      torch::NoGradGuard no_grad;
      output = input;
      for (const train::ModelUnit* u : model->units({first, 0}, {last, 0}))
        output = u->forward(output);
    }
    const torch::Tensor gradient = torch::randn(output.sizes());
    const Timing plain = time_stage(model, first, last, input, gradient, false, threads);
    const Timing again = time_stage(model, first, last, input, gradient, true, threads);
    table.add_row({c.name, text::format_fixed(plain.forward, 2), text::format_fixed(plain.whole, 2),
                   text::format_fixed(plain.input, 2), text::format_fixed(plain.weight, 2),
                   text::format_fixed((plain.input + plain.weight) / plain.whole, 2) + "×",
                   text::format_fixed(again.whole, 2), text::format_fixed(again.whole / plain.whole, 2) + "×",
                   text::format_fixed((again.input + again.weight) / plain.whole, 2) + "×",
                   text::format_fixed(again.forward / plain.forward, 2) + "×"});
  }
  std::printf("A middle stage's backward on the CPU, %d thread%s; medians of 9 micro-batches\n%s", threads,
              threads == 1 ? "" : "s", table.str().c_str());
  return 0;
}
