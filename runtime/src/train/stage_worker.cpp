/// StageWorker: forward, backward and optimizer step of one stage.

#include "train/cores.hpp"
#include "train/kept_buffers.hpp"
#include "train/lr_schedule.hpp"
#include "train/recomputation.hpp"
#include "train/stage_worker_impl.hpp"
#include "train/step_parts.hpp"
#include "train/tensor_box.hpp"

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace actorpipe::train {

namespace {

/// `payload`'s tensor ready on `device` (after the event its producer recorded).
torch::Tensor take(const device::StageDevice& device, const Payload& payload) {
  return device.take(payload->tensor, payload->ready.get());
}

/// `tensor`, computed on `device`'s stream, as a payload another stage may take.
Payload give(const device::StageDevice& device, torch::Tensor tensor) {
  return std::make_shared<const TensorBox>(TensorBox{std::move(tensor), std::nullopt, device.record()});
}

/// The lock of the default generator of `device`, which every stage computing there
/// draws from: stages on different GPUs take different locks, and do not wait for
/// each other's dropout.
std::mutex& generator_lock(c10::Device device) {
  static std::mutex guard;
  static std::map<std::pair<int, int>, std::mutex> locks; // a map's nodes stay where they are
  const std::lock_guard lock(guard);
  return locks[{static_cast<int>(device.type()), device.index()}];
}

/// A forward in training. Where the stage draws random numbers (dropout), it runs
/// under its device's generator lock, that generator seeded from the job's seed, the
/// replica and the forward's count: a run then repeats exactly, whatever order the
/// stage actors reach their forwards in, and every replica and micro-batch draws masks
/// of its own. LibTorch's modules (the C++ frontend's Dropout, TorchScript's
/// aten::dropout) take no generator: they draw from the device's default one, which is
/// why a stage cannot keep a generator of its own.
torch::Tensor training_forward(StageWorker::Impl& w, const torch::Tensor& x) {
  const std::uint64_t count = w.forwards++;
  if (!w.draws) return w.run(x);
  const c10::Device device = w.device.device();
  const std::lock_guard lock(generator_lock(device));
  std::uint64_t seed = w.setup.seed;
  for (const std::uint64_t part : {std::uint64_t{w.setup.pipeline}, std::uint64_t{w.setup.stage}, count})
    seed = (seed ^ part) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  at::Generator generator = at::globalContext().defaultGenerator(device);
  {
    const std::lock_guard own(generator.mutex());
    generator.set_current_seed(seed);
  }
  return w.run(x);
}

} // namespace

torch::Tensor StageWorker::Impl::run(torch::Tensor x) const {
  const device::AutocastScope autocast(setup.train.precision, device.device());
  const auto marked = [&](std::size_t i) { return i < setup.recomputed.size() && setup.recomputed[i]; };
  const bool training = torch::GradMode::is_enabled();
  for (std::size_t i = 0; i < units.size();) {
    if (!training || !marked(i)) {
      x = units[i]->forward(x);
      ++i;
      continue;
    }
    std::size_t end = i;
    std::vector<torch::Tensor> parameters, buffers;
    bool draws_here = false;
    for (; end < units.size() && marked(end); ++end) {
      parameters.insert(parameters.end(), units[end]->parameters.begin(), units[end]->parameters.end());
      buffers.insert(buffers.end(), units[end]->buffers.begin(), units[end]->buffers.end());
      draws_here = draws_here || units[end]->draws;
    }
    // Where the run draws (dropout), the generator's state now is what the run again
    // starts from: training_forward() holds the device's generator lock meanwhile.
    std::optional<at::Generator> generator;
    std::optional<torch::Tensor> drawn_from;
    if (draws_here) {
      generator = at::globalContext().defaultGenerator(device.device());
      const std::lock_guard own(generator->mutex());
      drawn_from = generator->get_state();
    }
    const c10::Device where = device.device();
    const Precision precision = setup.train.precision;
    std::vector<const ModelUnit*> run(units.begin() + static_cast<std::ptrdiff_t>(i),
                                      units.begin() + static_cast<std::ptrdiff_t>(end));
    const auto forward = [run](torch::Tensor y) {
      for (const ModelUnit* u : run)
        y = u->forward(y);
      return y;
    };
    const auto again = [forward, run, buffers, generator, drawn_from, where, precision](const torch::Tensor& y) {
      const device::AutocastScope autocast(precision, where);
      const KeptBuffers kept(buffers);
      if (!generator) return forward(y);
      const std::lock_guard lock(generator_lock(where));
      at::Generator g = *generator;
      torch::Tensor state;
      {
        const std::lock_guard own(g.mutex());
        state = g.get_state();
        g.set_state(*drawn_from);
      }
      torch::Tensor out = forward(y);
      const std::lock_guard own(g.mutex());
      g.set_state(state);
      return out;
    };
    x = recomputed(again, forward, x, parameters);
    i = end;
  }
  return x;
}

GraphedPasses* StageWorker::Impl::graphed(const torch::Tensor& x, bool first, bool last) {
  if (graphs_considered) return graphs && graphs->why().empty() ? graphs.get() : nullptr;
  graphs_considered = true;
  const bool recomputes = std::find(setup.recomputed.begin(), setup.recomputed.end(), true) != setup.recomputed.end();
  const bool input_gradient = !first && x.is_floating_point();
  const bool learns =
      std::any_of(parameters.begin(), parameters.end(), [](const auto& p) { return p.requires_grad(); });
  const bool wanted = setup.train.cuda_graphs == CudaGraphs::on ||
                      (setup.train.cuda_graphs == CudaGraphs::shared_gpus && setup.gpu_shared);
  if (!wanted || !GraphedPasses::possible(device.device()) || draws || recomputes || (!learns && !input_gradient))
    return nullptr;
  GraphedPasses::Compute compute = [this, last](const torch::Tensor& input, const torch::Tensor& labels) {
    torch::Tensor y = run(input);
    return last ? mean_loss(y.to(torch::kFloat), labels) : y;
  };
  graphs = std::make_unique<GraphedPasses>(device.device(), std::move(compute), parameters, buffers, input_gradient,
                                           scaler ? scaler->scale() : torch::Tensor());
  return graphs.get();
}

namespace {

/// The backward of the micro-batch in `slot` of the stage's graphs: its input's gradient.
Payload graphed_backward(StageWorker::Impl& w, std::size_t slot, const Payload& output_gradient, bool first,
                         bool last) {
  const torch::Tensor gradient = last ? torch::Tensor() : take(w.device, output_gradient);
  torch::Tensor input_gradient = w.graphs->backward(slot, gradient);
  if (first || !input_gradient.defined()) return nullptr;
  return give(w.device, std::move(input_gradient));
}

/// The graphs that computed a micro-batch, where they did. Where capturing failed, it says
/// so; the graphs then compute only the backwards of the micro-batches they hold.
std::optional<GraphedPasses::Forwarded> graphed_forward(StageWorker::Impl& w, const torch::Tensor& x,
                                                        const torch::Tensor& labels, double scale, bool first,
                                                        bool last) {
  GraphedPasses* graphs = w.graphed(x, first, last);
  if (!graphs) return std::nullopt;
  auto forwarded = graphs->forward(x, labels, scale);
  if (!graphs->why().empty()) {
    std::cerr << "actorpipe: stage " << w.setup.stage << " of pipeline " << w.setup.pipeline
              << ": CUDA graphs could not be captured (" << graphs->why() << "); it computes eagerly\n";
  }
  return forwarded;
}

} // namespace

StageWorker::StageWorker(std::shared_ptr<const Model> model, const StageSetup& setup)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  impl_->setup = setup;
  impl_->units = impl_->model->units(setup.begin, setup.end);
  for (const ModelUnit* u : impl_->units) {
    u->set_training(true);
    impl_->parameters.insert(impl_->parameters.end(), u->parameters.begin(), u->parameters.end());
    impl_->buffers.insert(impl_->buffers.end(), u->buffers.begin(), u->buffers.end());
    impl_->draws = impl_->draws || u->draws;
  }
  if (setup.cuda_device >= 0) {
    impl_->device = device::StageDevice::cuda(setup.cuda_device);
    for (auto* tensors : {&impl_->parameters, &impl_->buffers})
      for (torch::Tensor& t : *tensors)
        impl_->device.adopt(t);
  }
  if (setup.train.precision == Precision::fp16)
    impl_->scaler = std::make_unique<device::LossScaler>(impl_->device.device());
  // A stage may hold no trainable parameters (a pooling block); the optimizer then
  // has nothing to do.
  if (!impl_->parameters.empty()) impl_->optimizer = make_optimizer(impl_->parameters, setup.train);
}

StageWorker::~StageWorker() = default;

const StageSetup& StageWorker::setup() const { return impl_->setup; }

Payload StageWorker::forward(std::size_t micro, const Payload& input) {
  use_compute_threads(impl_->setup.threads);
  const auto on = impl_->device.enter();
  torch::Tensor x = take(impl_->device, input);
  if (auto graphed = graphed_forward(*impl_, x, {}, 1, first(), false)) {
    ++impl_->forwards;
    impl_->stash[micro] = {{}, {}, std::nullopt, graphed->slot, false};
    return give(impl_->device, graphed->output);
  }
  // Floating-point inputs from the stage before become leaves that collect the
  // gradient to send back; the storage is shared, not copied.
  if (!first() && x.is_floating_point()) x = x.detach().requires_grad_(true);
  torch::Tensor y = training_forward(*impl_, x);
  impl_->stash[micro] = {x, y, std::nullopt, std::nullopt, false};
  return give(impl_->device, y.detach());
}

void StageWorker::forward_loss(std::size_t micro, const Payload& input, const Payload& labels, double loss_scale,
                               std::uint32_t samples) {
  use_compute_threads(impl_->setup.threads);
  const auto on = impl_->device.enter();
  torch::Tensor x = take(impl_->device, input);
  const torch::Tensor y = take(impl_->device, labels);
  const auto add_loss = [&](const torch::Tensor& loss) {
    // In double, as the loss was summed when read one micro-batch at a time.
    const torch::Tensor weighted = loss.detach().to(torch::kDouble) * static_cast<double>(samples);
    impl_->loss_sum = impl_->loss_sum.defined() ? impl_->loss_sum + weighted : weighted;
  };
  if (auto graphed = graphed_forward(*impl_, x, y, loss_scale, first(), true)) {
    ++impl_->forwards;
    add_loss(graphed->output);
    impl_->stash[micro] = {{}, {}, std::nullopt, graphed->slot, false};
    return;
  }
  if (!first() && x.is_floating_point()) x = x.detach().requires_grad_(true);
  const torch::Tensor logits = training_forward(*impl_, x);
  const torch::Tensor loss = mean_loss(logits.to(torch::kFloat), y);
  add_loss(loss);
  torch::Tensor start = loss * loss_scale;
  if (impl_->scaler) start = start * impl_->scaler->scale();
  impl_->stash[micro] = {x, start, std::nullopt, std::nullopt, false};
}

double StageWorker::take_loss_sum() {
  if (!impl_->loss_sum.defined()) return 0;
  const auto on = impl_->device.enter();
  const double sum = impl_->loss_sum.item<double>();
  impl_->loss_sum = torch::Tensor();
  return sum;
}

Payload StageWorker::backward(std::size_t micro, const Payload& output_gradient) {
  use_compute_threads(impl_->setup.threads);
  auto it = impl_->stash.find(micro);
  if (it == impl_->stash.end())
    throw std::logic_error("backward of micro-batch " + std::to_string(micro) + " before its forward");
  const auto on = impl_->device.enter();
  Impl::Stash stash = std::move(it->second);
  impl_->stash.erase(it);
  if (stash.slot) return graphed_backward(*impl_, *stash.slot, output_gradient, first(), last());
  // A first stage without parameters (a Flatten) has no gradient to compute: nothing
  // before it takes one, and it learns nothing.
  if (!stash.output.requires_grad()) return nullptr;
  if (last())
    stash.output.backward();
  else
    stash.output.backward(take(impl_->device, output_gradient));
  if (first() || !stash.input.requires_grad()) return nullptr;
  return give(impl_->device, stash.input.grad());
}

Payload StageWorker::backward_input(std::size_t micro, const Payload& output_gradient) {
  use_compute_threads(impl_->setup.threads);
  auto it = impl_->stash.find(micro);
  if (it == impl_->stash.end() || it->second.weights || it->second.weights_added)
    throw std::logic_error("input gradient of micro-batch " + std::to_string(micro) +
                           (it == impl_->stash.end() ? " before its forward" : " twice"));
  const auto on = impl_->device.enter();
  Impl::Stash& stash = it->second;
  if (stash.slot) {
    // The graphs compute both halves at once: the weights' gradients are added now,
    // and the W has nothing left to do.
    stash.weights_added = true;
    return graphed_backward(*impl_, *std::exchange(stash.slot, std::nullopt), output_gradient, first(), last());
  }
  const torch::Tensor gradient = last() ? torch::Tensor() : take(impl_->device, output_gradient);
  auto [input_gradient, weights] = WeightGradients::input_gradient(
      stash.output, gradient, first() ? torch::Tensor() : stash.input, impl_->parameters);
  stash.weights.emplace(std::move(weights));
  stash.output = torch::Tensor(); // what only the input's gradient needed goes with it
  stash.input = torch::Tensor();
  if (first() || !input_gradient.defined()) return nullptr;
  return give(impl_->device, input_gradient);
}

void StageWorker::backward_weight(std::size_t micro) {
  use_compute_threads(impl_->setup.threads);
  auto it = impl_->stash.find(micro);
  if (it == impl_->stash.end() || !(it->second.weights || it->second.weights_added))
    throw std::logic_error("weight gradient of micro-batch " + std::to_string(micro) + " before its input gradient");
  if (it->second.weights_added) {
    impl_->stash.erase(it);
    return;
  }
  const auto on = impl_->device.enter();
  WeightGradients weights = std::move(*it->second.weights);
  impl_->stash.erase(it);
  weights.accumulate(impl_->parameters);
}

std::size_t StageWorker::stashed() const { return impl_->stash.size(); }

namespace {

/// The step's gradients, unscaled once under fp16; whether they are finite.
bool unscale(StageWorker::Impl& w) {
  if (!w.scaler) return true;
  if (!w.unscaled) {
    std::vector<torch::Tensor> gradients;
    for (torch::Tensor& p : w.parameters) {
      if (!p.grad().defined()) continue;
      if (w.shared_gradients) p.mutable_grad() = p.grad().clone(); // its own copy, unscaled once
      gradients.push_back(p.grad());
    }
    w.unscaled = w.scaler->unscale(gradients);
  }
  return *w.unscaled;
}

} // namespace

double StageWorker::gradient_square_sum() {
  if (impl_->parameters.empty()) return 0;
  const auto on = impl_->device.enter();
  if (!unscale(*impl_)) return std::numeric_limits<double>::infinity();
  return square_sum(impl_->parameters);
}

void StageWorker::step(std::uint64_t step, double gradient_norm) {
  if (!impl_->optimizer) return;
  const auto on = impl_->device.enter();
  const bool finite = unscale(*impl_);
  impl_->unscaled.reset();
  impl_->shared_gradients = false;
  if (finite) {
    const double scale = clip_scale(impl_->setup.train.clip_norm, gradient_norm);
    if (scale < 1.0) scale_gradient_copies(impl_->parameters, scale);
    set_lr(*impl_->optimizer, lr_at(impl_->setup.train, step, impl_->total_steps));
    impl_->optimizer->step();
  }
  if (impl_->buckets.bound()) {
    impl_->buckets.next(impl_->parameters);
    return;
  }
  // Dropped rather than zeroed: the next backward takes its first gradient as it comes,
  // and replicas may share one summed gradient (sum_gradients), which zeroing in
  // place would make them accumulate into together.
  for (torch::Tensor& p : impl_->parameters)
    p.mutable_grad() = torch::Tensor();
}

void StageWorker::set_schedule(std::uint64_t first_step, std::uint64_t total_steps) {
  impl_->first_step = first_step;
  impl_->total_steps = total_steps;
}

std::uint64_t StageWorker::skipped_steps() const { return impl_->scaler ? impl_->scaler->skipped() : 0; }

void StageWorker::settle() const { impl_->device.settle(); }

void write_state(const StageWorker::Impl& stage, torch::serialize::OutputArchive& archive) {
  for (const auto& [key, tensors] : {std::pair{"p", &stage.parameters}, std::pair{"b", &stage.buffers}})
    for (std::size_t i = 0; i < tensors->size(); ++i)
      archive.write(key + std::to_string(i), (*tensors)[i].cpu()); // a checkpoint reads back on any machine
  if (stage.optimizer) {
    torch::serialize::OutputArchive optimizer;
    stage.optimizer->save(optimizer);
    archive.write("optimizer", optimizer);
  }
}

std::string read_state(StageWorker::Impl& stage, torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (const auto& [key, what, tensors] :
       {std::tuple{"p", "parameter", &stage.parameters}, std::tuple{"b", "buffer", &stage.buffers}})
    for (std::size_t i = 0; i < tensors->size(); ++i) {
      torch::Tensor saved;
      archive.read(key + std::to_string(i), saved);
      if (!saved.sizes().equals((*tensors)[i].sizes()))
        return std::string(what) + " " + std::to_string(i) + " has another shape than the model's";
      (*tensors)[i].copy_(saved);
    }
  if (stage.optimizer) {
    torch::serialize::InputArchive optimizer;
    archive.read("optimizer", optimizer);
    // LibTorch asserts on state of another optimizer (SGD's momentum read as Adam's),
    // in words that ask for a bug report: said here in the job's.
    try {
      stage.optimizer->load(optimizer);
    } catch (const c10::Error&) {
      return "has optimizer state that the job's optimizer (train.optimizer) cannot take: the checkpoint was "
             "written with another optimizer";
    }
  }
  return {};
}

std::string StageWorker::state_bytes() const {
  torch::serialize::OutputArchive archive;
  write_state(*impl_, archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

void StageWorker::load_state_bytes(const std::string& bytes) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  if (const std::string wrong = read_state(*impl_, archive); !wrong.empty())
    throw std::runtime_error("stage " + std::to_string(setup().stage) + ": " + wrong);
}

} // namespace actorpipe::train
