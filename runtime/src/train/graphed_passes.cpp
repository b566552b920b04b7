/// GraphedPasses: a stage's forward and backward captured as CUDA graphs with LibTorch's
/// own CUDA API (at::cuda::CUDAGraph), one pair per micro-batch in flight.

#include "train/graphed_passes.hpp"

#include "base/text.hpp"
#include "train/kept_buffers.hpp"

#ifdef ACTORPIPE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cstdint>
#include <exception>

namespace actorpipe::train {

#ifdef ACTORPIPE_CUDA

struct GraphedPasses::Slot {
  at::cuda::CUDAGraph forward, backward;
  /// What the graphs read: copied in before each replay.
  torch::Tensor input, labels, scale, output_gradient;
  /// What they write: copied out after each replay.
  torch::Tensor output, input_gradient;
  /// By trained parameter; undefined where the stage's compute does not use it.
  std::vector<torch::Tensor> weight_gradients;
  double scale_value = 1;
  bool busy = false;
};

struct GraphedPasses::State {
  c10::Device device;
  Compute compute;
  std::vector<torch::Tensor> trained; ///< the parameters that take a gradient
  std::vector<torch::Tensor> buffers;
  bool input_gradient = false;
  torch::Tensor loss_scale;
  /// Captures run on a stream of their own, as LibTorch asks (not the default stream),
  /// which the stage's stream and it order each other around.
  c10::cuda::CUDAStream capture_stream;
  bool last = false;   ///< known at the first forward: it has labels
  bool warmed = false; ///< the eager passes before the first capture have run
  /// Shapes and types (on the meta device) of the first input and labels, whose shapes
  /// the graphs take, and of the output, whose gradient the backward's graph reads.
  torch::Tensor input_like, labels_like, output_like;
  std::vector<std::unique_ptr<Slot>> slots;

  State(c10::Device on, Compute forward, std::vector<torch::Tensor> kept, bool gradient, torch::Tensor scale)
      : device(on), compute(std::move(forward)), buffers(std::move(kept)), input_gradient(gradient),
        loss_scale(std::move(scale)), capture_stream(c10::cuda::getStreamFromPool(false, on.index())) {}

  /// The forward with autograd on, from the slot's static tensors: the output, and what
  /// the backward starts from (the loss times the scale on the last stage).
  std::pair<torch::Tensor, torch::Tensor> forward(Slot& slot) const {
    const torch::AutoGradMode grad(true);
    torch::Tensor output = compute(slot.input, slot.labels);
    if (!last) return {output, output};
    torch::Tensor root = output * slot.scale;
    if (loss_scale.defined()) root = root * loss_scale;
    return {output, root};
  }

  std::vector<torch::Tensor> differentiated(const Slot& slot) const {
    std::vector<torch::Tensor> inputs;
    if (input_gradient) inputs.push_back(slot.input);
    inputs.insert(inputs.end(), trained.begin(), trained.end());
    return inputs;
  }

  /// The backward with autograd, into new tensors (none where unused).
  std::vector<torch::Tensor> backward(Slot& slot, const torch::Tensor& root) const {
    const std::vector<torch::Tensor> gradients =
        last ? std::vector<torch::Tensor>{} : std::vector<torch::Tensor>{slot.output_gradient};
    return torch::autograd::grad({root}, differentiated(slot), gradients, /*retain_graph=*/false,
                                 /*create_graph=*/false, /*allow_unused=*/true);
  }
};

namespace {

/// A tensor of `t`'s shape and type that holds no memory.
torch::Tensor meta_like(const torch::Tensor& t) {
  return t.defined() ? torch::empty(t.sizes(), t.options().device(torch::kMeta)) : torch::Tensor();
}

/// `later` waits (on the GPU) for what `earlier` has queued so far.
void order(const c10::cuda::CUDAStream& earlier, const c10::cuda::CUDAStream& later) {
  at::cuda::CUDAEvent done;
  done.record(earlier);
  done.block(later);
}

/// Ends a capture that an error interrupted, so that the stream captures no more.
void abandon(at::cuda::CUDAGraph& graph) {
  try {
    graph.capture_end();
  } catch (...) { // the error that interrupted it is the one to report
  }
}

/// Captures one slot's pair of graphs for inputs like `input` and `labels`. The first
/// slot's passes run eagerly twice before, on the capture stream, so that what LibTorch
/// sets up on first use (cuBLAS's workspace for the stream, cuDNN's plans, autocast's
/// kernels) is not set up inside a graph.
std::unique_ptr<GraphedPasses::Slot> capture(GraphedPasses::State& s, const torch::Tensor& input,
                                             const torch::Tensor& labels) {
  auto slot = std::make_unique<GraphedPasses::Slot>();
  {
    const torch::NoGradGuard no_grad;
    slot->input = input.clone();
    if (labels.defined()) slot->labels = labels.clone();
    if (s.last) slot->scale = torch::ones({}, torch::TensorOptions().dtype(torch::kFloat).device(s.device));
  }
  if (s.input_gradient) slot->input.requires_grad_(true);
  const c10::cuda::CUDAStream stage = c10::cuda::getCurrentCUDAStream(s.device.index());
  order(stage, s.capture_stream);
  {
    const c10::cuda::CUDAStreamGuard on(s.capture_stream);
    if (!s.warmed) {
      const KeptBuffers kept(s.buffers);
      for (int k = 0; k < 2; ++k) {
        auto [output, root] = s.forward(*slot);
        if (!s.last) {
          s.output_like = meta_like(output);
          slot->output_gradient = torch::zeros(output.sizes(), output.options());
        }
        s.backward(*slot, root);
      }
      s.warmed = true;
    }
    if (!s.last && !slot->output_gradient.defined())
      slot->output_gradient = torch::zeros(s.output_like.sizes(), s.output_like.options().device(s.device));
    s.capture_stream.synchronize();

    // Thread-local capture: the other stages on this GPU go on computing from their own
    // threads meanwhile, which a global capture would forbid.
    torch::Tensor output, root;
    slot->forward.capture_begin(at::cuda::graph_pool_handle(), cudaStreamCaptureModeThreadLocal);
    try {
      std::tie(output, root) = s.forward(*slot);
    } catch (...) {
      abandon(slot->forward);
      throw;
    }
    slot->forward.capture_end();
    // The backward's graph allocates from the forward's pool: it frees the activations
    // the forward kept, and its own temporaries may take their place.
    slot->backward.capture_begin(slot->forward.pool(), cudaStreamCaptureModeThreadLocal);
    std::vector<torch::Tensor> gradients;
    try {
      gradients = s.backward(*slot, root);
    } catch (...) {
      abandon(slot->backward);
      throw;
    }
    slot->backward.capture_end();
    slot->output = output.detach();
    std::size_t next = 0;
    if (s.input_gradient) slot->input_gradient = gradients[next++];
    slot->weight_gradients.assign(gradients.begin() + static_cast<std::ptrdiff_t>(next), gradients.end());
  }
  order(s.capture_stream, stage);
  return slot;
}

/// Adds `gradients` to `parameters`' own, as autograd's accumulation does: in place
/// where a parameter has one (a gradient bucket's view among them), a copy where not.
void accumulate(const std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& gradients) {
  std::vector<torch::Tensor> sums, added, fresh, copied;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& g = gradients[i];
    if (!g.defined()) continue;
    torch::Tensor p = parameters[i];
    if (p.grad().defined()) {
      sums.push_back(p.grad());
      added.push_back(g);
    } else {
      p.mutable_grad() = torch::empty_like(g);
      fresh.push_back(p.grad());
      copied.push_back(g);
    }
  }
  if (!sums.empty()) at::_foreach_add_(sums, added);
  if (!fresh.empty()) at::_foreach_copy_(fresh, copied);
}

} // namespace

bool GraphedPasses::possible(c10::Device device) { return device.is_cuda(); }

GraphedPasses::GraphedPasses(c10::Device device, Compute compute, std::vector<torch::Tensor> parameters,
                             std::vector<torch::Tensor> buffers, bool input_gradient, torch::Tensor loss_scale)
    : state_(std::make_unique<State>(device, std::move(compute), std::move(buffers), input_gradient,
                                     std::move(loss_scale))) {
  for (const torch::Tensor& p : parameters)
    if (p.requires_grad()) state_->trained.push_back(p);
}

GraphedPasses::~GraphedPasses() = default;

std::size_t GraphedPasses::slots() const { return state_ ? state_->slots.size() : 0; }

std::optional<GraphedPasses::Forwarded> GraphedPasses::forward(const torch::Tensor& input, const torch::Tensor& labels,
                                                               double scale) {
  if (!failed_.empty()) return std::nullopt;
  State& s = *state_;
  const auto like = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.defined() == b.defined() && (!a.defined() || (a.sizes() == b.sizes() && a.dtype() == b.dtype()));
  };
  if (!s.input_like.defined()) {
    s.last = labels.defined();
    s.input_like = meta_like(input);
    s.labels_like = meta_like(labels);
  } else if (!like(input, s.input_like) || !like(labels, s.labels_like)) {
    return std::nullopt;
  }
  std::size_t index = 0;
  while (index < s.slots.size() && s.slots[index]->busy)
    ++index;
  if (index == s.slots.size()) {
    try {
      s.slots.push_back(capture(s, input, labels));
    } catch (const std::exception& e) {
      failed_ = text::message_of(e);
      return std::nullopt;
    }
  }
  Slot& slot = *s.slots[index];
  {
    const torch::NoGradGuard no_grad;
    slot.input.copy_(input);
    if (s.last) {
      slot.labels.copy_(labels);
      if (scale != slot.scale_value) slot.scale.fill_(scale);
      slot.scale_value = scale;
    }
  }
  slot.forward.replay();
  slot.busy = true;
  return Forwarded{index, slot.output.clone()};
}

torch::Tensor GraphedPasses::backward(std::size_t index, const torch::Tensor& output_gradient) {
  Slot& slot = *state_->slots.at(index);
  if (output_gradient.defined()) {
    const torch::NoGradGuard no_grad;
    slot.output_gradient.copy_(output_gradient);
  }
  slot.backward.replay();
  const torch::NoGradGuard no_grad;
  accumulate(state_->trained, slot.weight_gradients);
  slot.busy = false;
  return slot.input_gradient.defined() ? slot.input_gradient.clone() : torch::Tensor();
}

#else

struct GraphedPasses::Slot {};
struct GraphedPasses::State {};

bool GraphedPasses::possible(c10::Device) { return false; }

GraphedPasses::GraphedPasses(c10::Device, Compute, std::vector<torch::Tensor>, std::vector<torch::Tensor>, bool,
                             torch::Tensor)
    : failed_("this actorpipe was built without CUDA") {}

GraphedPasses::~GraphedPasses() = default;

std::size_t GraphedPasses::slots() const { return 0; }

std::optional<GraphedPasses::Forwarded> GraphedPasses::forward(const torch::Tensor&, const torch::Tensor&, double) {
  return std::nullopt;
}

torch::Tensor GraphedPasses::backward(std::size_t, const torch::Tensor&) {
  throw std::logic_error("backward of a CUDA graph in a build without CUDA");
}

#endif

} // namespace actorpipe::train
