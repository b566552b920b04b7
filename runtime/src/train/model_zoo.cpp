/// The built-in models (mlp, cnn, resnet, gpt) and TorchScript import, each as blocks
/// of units that a plan can cut between.

#include "train/model_zoo.hpp"

#include "base/input_file.hpp"
#include "base/text.hpp"
#include "config/job_place.hpp"
#include "train/checkpoint_file.hpp"

#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include <cmath>
#include <filesystem>

namespace actorpipe::train {

namespace nn = torch::nn;

namespace {

/// Residual block of the small resnet: two 3×3 convolutions with group norm (batch
/// norm would make micro-batched training differ from whole-batch training).
struct ResidualImpl : nn::Module {
  explicit ResidualImpl(std::int64_t channels)
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(channels, channels, 3).padding(1)))),
        norm1(register_module("norm1", nn::GroupNorm(nn::GroupNormOptions(4, channels)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(channels, channels, 3).padding(1)))),
        norm2(register_module("norm2", nn::GroupNorm(nn::GroupNormOptions(4, channels)))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(norm1(conv1(x)));
    return torch::relu(x + norm2(conv2(y)));
  }
  nn::Conv2d conv1;
  nn::GroupNorm norm1;
  nn::Conv2d conv2;
  nn::GroupNorm norm2;
};
TORCH_MODULE(Residual);

/// A Linear whose forward is ATen's linear, which folds an input of more than two
/// dimensions into one GEMM with the bias in its epilogue. The C++ frontend's own
/// forward multiplies and then adds the bias in a broadcast kernel of its own: on an
/// H100 those adds took 8 ms of the 55 ms bf16 step of a 12-layer, 1024-wide gpt, 49
/// kernels that PyTorch eager never launches. Parameters and their names are Linear's.
struct GemmLinearImpl : nn::LinearImpl {
  using nn::LinearImpl::LinearImpl;
  torch::Tensor forward(const torch::Tensor& x) { return torch::linear(x, weight, bias); }
};
TORCH_MODULE(GemmLinear);

/// Token and position embeddings of the gpt.
struct EmbeddingImpl : nn::Module {
  EmbeddingImpl(std::int64_t vocab, std::int64_t context, std::int64_t width)
      : tokens(register_module("tokens", nn::Embedding(vocab, width))),
        positions(register_module("positions", nn::Embedding(context, width))) {
    torch::NoGradGuard no_grad;
    tokens->weight.normal_(0, 0.02);
    positions->weight.normal_(0, 0.02);
  }
  torch::Tensor forward(const torch::Tensor& ids) {
    const auto position = torch::arange(ids.size(1), ids.options().dtype(torch::kLong));
    return tokens(ids) + positions(position).unsqueeze(0);
  }
  nn::Embedding tokens;
  nn::Embedding positions;
};
TORCH_MODULE(Embedding);

/// Causal self-attention with its residual: x + proj(attention(norm(x))).
struct AttentionImpl : nn::Module {
  AttentionImpl(std::int64_t width, std::int64_t heads)
      : heads_(heads), norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({width})))),
        qkv(register_module("qkv", GemmLinear(width, 3 * width))),
        proj(register_module("proj", GemmLinear(width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const auto B = x.size(0), T = x.size(1), C = x.size(2), D = C / heads_;
    auto parts = qkv(norm(x)).split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, heads_, D}).transpose(1, 2); };
    const auto q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    // LibTorch's fused attention (flash or memory-efficient kernels on a GPU), causal.
    const auto y =
        at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true).transpose(1, 2).reshape({B, T, C});
    return x + proj(y);
  }
  std::int64_t heads_;
  nn::LayerNorm norm;
  GemmLinear qkv;
  GemmLinear proj;
};
TORCH_MODULE(Attention);

/// The transformer's MLP with its residual: x + down(gelu(up(norm(x)))).
struct FeedForwardImpl : nn::Module {
  explicit FeedForwardImpl(std::int64_t width)
      : norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({width})))),
        up(register_module("up", GemmLinear(width, 4 * width))),
        down(register_module("down", GemmLinear(4 * width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + down(torch::gelu(up(norm(x)))); }
  nn::LayerNorm norm;
  GemmLinear up;
  GemmLinear down;
};
TORCH_MODULE(FeedForward);

/// 2×2 max pooling computed on a channels-last copy of its input: PyTorch's CPU kernel
/// is an order of magnitude slower on contiguous (NCHW) tensors, far more than the
/// copy costs. The result is the same, in channels-last order.
struct ChannelsLastMaxPoolImpl : nn::Module {
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::max_pool2d(x.contiguous(torch::MemoryFormat::ChannelsLast), 2);
  }
};
TORCH_MODULE(ChannelsLastMaxPool);

/// A convolution block whose weights are held in channels-last order, as the pooling
/// leaves its activations: oneDNN's convolutions then compute both passes in that order
/// (with a channels-last gradient and contiguous weights, the weights' gradient takes
/// a path several times slower). Values are unchanged. Copied rather than made
/// contiguous: a weight of one input channel is contiguous in both orders already, yet
/// oneDNN picks its path by the strides, which only the copy sets.
nn::Sequential channels_last(nn::Sequential block) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : block->parameters())
    if (p.dim() == 4) p.set_data(torch::empty_like(p, torch::MemoryFormat::ChannelsLast).copy_(p));
  return block;
}

template <class Holder> ModelUnit unit(std::string name, Holder module) {
  ModelUnit u;
  u.name = std::move(name);
  u.parameters = module->parameters();
  u.buffers = module->buffers();
  u.forward = [module](const torch::Tensor& x) mutable { return module->forward(x); };
  u.set_training = [module](bool on) mutable { module->train(on); };
  u.owner = module.ptr();
  return u;
}

template <class Holder> ModelBlock block(std::string name, Holder module) {
  ModelBlock b;
  b.units.push_back(unit(name, std::move(module)));
  b.name = std::move(name);
  return b;
}

std::int64_t flat_size(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

Result<Model> mlp(const ModelOptions& o, const DataShape& shape) {
  const std::int64_t width = o.width ? o.width : 128, layers = o.layers ? o.layers : 2;
  Model m;
  std::int64_t inputs = flat_size(shape.sample);
  for (std::int64_t l = 0; l < layers; ++l) {
    nn::Sequential layer;
    if (l == 0) layer->push_back(nn::Flatten());
    layer->push_back(nn::Linear(inputs, width));
    layer->push_back(nn::ReLU());
    m.blocks.push_back(block("layer" + std::to_string(l), layer));
    inputs = width;
  }
  nn::Sequential output;
  if (layers == 0) output->push_back(nn::Flatten());
  output->push_back(nn::Linear(inputs, shape.classes));
  m.blocks.push_back(block("output", output));
  return m;
}

/// What the data's samples are, for a model that cannot take them.
std::string samples_of(const DataShape& shape) {
  std::string dims;
  for (auto d : shape.sample)
    dims += (dims.empty() ? "" : " × ") + std::to_string(d);
  return "samples of " + dims + (shape.tokens ? " token ids" : "") +
         (shape.source.empty() ? "" : " (" + shape.source + ")");
}

Status need_image(const DataShape& shape, const char* model) {
  if (shape.sample.size() != 3 || shape.tokens)
    return Error::bad_input(std::string("model.zoo = \"") + model +
                            "\" needs image samples of shape [channels, height, width], not " + samples_of(shape));
  return Ok{};
}

Result<Model> cnn(const ModelOptions& o, const DataShape& shape) {
  ACTORPIPE_TRY(need_image(shape, "cnn"));
  const std::int64_t width = o.width ? o.width : 16, C = shape.sample[0];
  const std::int64_t H = shape.sample[1] / 4, W = shape.sample[2] / 4;
  Model m;
  m.blocks.push_back(block("conv1", channels_last(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(C, width, 3).padding(1)),
                                                                 nn::ReLU(), ChannelsLastMaxPool()))));
  m.blocks.push_back(
      block("conv2", channels_last(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(width, 2 * width, 3).padding(1)),
                                                  nn::ReLU(), ChannelsLastMaxPool()))));
  ModelBlock head;
  head.name = "head";
  head.has_sub_blocks = true;
  head.units.push_back(unit("hidden", nn::Sequential(nn::Flatten(), nn::Linear(2 * width * H * W, 128), nn::ReLU())));
  head.units.push_back(unit("classifier", nn::Sequential(nn::Linear(128, shape.classes))));
  m.blocks.push_back(std::move(head));
  return m;
}

Result<Model> resnet(const ModelOptions& o, const DataShape& shape) {
  ACTORPIPE_TRY(need_image(shape, "resnet"));
  const std::int64_t width = o.width ? o.width : 16, layers = o.layers ? o.layers : 3;
  Model m;
  m.blocks.push_back(block("stem", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(shape.sample[0], width, 3).padding(1)),
                                                  nn::GroupNorm(nn::GroupNormOptions(4, width)), nn::ReLU())));
  for (std::int64_t l = 0; l < layers; ++l)
    m.blocks.push_back(block("residual" + std::to_string(l), Residual(width)));
  m.blocks.push_back(block("head", nn::Sequential(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions(1)), nn::Flatten(),
                                                  nn::Linear(width, shape.classes))));
  return m;
}

Result<Model> gpt(const ModelOptions& o, const DataShape& shape) {
  if (!shape.tokens)
    return Error::bad_key("model.zoo", "\"gpt\" needs token ids (data.dataset = \"text\" or \"tokens\", or npy or "
                                       "plugin data of an integer type), not " +
                                           samples_of(shape));
  const std::int64_t width = o.width ? o.width : 64, layers = o.layers ? o.layers : 2, heads = o.heads;
  if (width % heads != 0)
    return Error::bad_key("model.width",
                          std::to_string(width) + " is not a multiple of model.heads (" + std::to_string(heads) + ")");
  Model m;
  m.blocks.push_back(block("embedding", Embedding(shape.classes, shape.sample.at(0), width)));
  for (std::int64_t l = 0; l < layers; ++l) {
    ModelBlock b;
    b.name = "block" + std::to_string(l);
    b.has_sub_blocks = true;
    b.units.push_back(unit("attention", Attention(width, heads)));
    b.units.push_back(unit("mlp", FeedForward(width)));
    m.blocks.push_back(std::move(b));
  }
  m.blocks.push_back(
      block("head", nn::Sequential(nn::LayerNorm(nn::LayerNormOptions({width})), GemmLinear(width, shape.classes))));
  return m;
}

/// Whether a module's forward, its submodules' inlined, draws random numbers.
bool draws_random_numbers(const torch::jit::Module& module) {
  const auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  std::function<bool(torch::jit::Block*)> any = [&](torch::jit::Block* block) {
    for (torch::jit::Node* node : block->nodes()) {
      const std::string kind = node->kind().toQualString();
      if (kind.find("dropout") != std::string::npos || kind.starts_with("aten::rand") ||
          kind.starts_with("aten::bernoulli") || kind.starts_with("aten::normal") ||
          kind.starts_with("aten::multinomial") || kind.starts_with("aten::rrelu"))
        return true;
      for (torch::jit::Block* inner : node->blocks())
        if (any(inner)) return true;
    }
    return false;
  };
  return any(graph->block());
}

/// What to do with a model that cannot be cut, for every refusal below.
constexpr const char* export_advice =
    "save the model as torch.jit.script(nn.Sequential(...)).save(FILE), its blocks as the Sequential's children "
    "(docs/models.md)";

/// A scripted module whose forward calls its top-level children in order (an
/// nn.Sequential, or a GPT-style model of an embedding, an nn.ModuleList of layers and
/// a head): the children are the blocks, and a child without a forward of its own
/// (nn.ModuleList) lists one block per child, named as its parameters are ("layers.0").
Result<Model> torchscript(const ModelOptions& o) {
  ACTORPIPE_TRY(check_input_file(o.file));
  // A checkpoint is a LibTorch archive too, and may even load as a module.
  auto refuse = [&](const std::string& why) {
    if (auto bytes = read_file(o.file); bytes && unseal_checkpoint(*bytes, o.file))
      return Error::bad_input(
          o.file + ": an actorpipe checkpoint, not a model: resume a run from it with --resume, or " + export_advice);
    return Error::bad_input(o.file + ": " + why + ": " + export_advice);
  };
  std::shared_ptr<torch::jit::Module> module;
  try {
    module = std::make_shared<torch::jit::Module>(torch::jit::load(o.file));
  } catch (const std::exception& e) {
    return refuse("not a TorchScript module (" + text::message_of(e) + ")");
  }
  // Its blocks hold every parameter and buffer: what the module keeps itself would be
  // on no stage, and never trained.
  if (module->parameters(/*recurse=*/false).size() > 0 || module->buffers(/*recurse=*/false).size() > 0)
    return refuse("it holds parameters or buffers of its own, outside its children (put them in a child module, "
                  "e.g. the embedding that adds positions)");
  std::vector<std::pair<std::string, torch::jit::Module>> blocks;
  for (const auto& child : module->named_children()) {
    if (child.value.find_method("forward")) {
      blocks.emplace_back(child.name, child.value);
      continue;
    }
    for (const auto& inner : child.value.named_children())
      blocks.emplace_back(child.name + "." + inner.name, inner.value);
  }
  Model m;
  for (const auto& [name, child] : blocks) {
    ModelUnit u;
    u.name = name;
    for (const auto& p : child.parameters())
      u.parameters.push_back(p);
    for (const auto& b : child.buffers())
      u.buffers.push_back(b);
    u.forward = [c = child](const torch::Tensor& x) mutable { return c.forward({x}).toTensor(); };
    u.set_training = [c = child](bool on) mutable { c.train(on); };
    u.draws = draws_random_numbers(child);
    u.owner = module;
    ModelBlock b;
    b.name = name;
    b.units.push_back(std::move(u));
    m.blocks.push_back(std::move(b));
  }
  if (m.blocks.empty()) return refuse("the module has no children to use as blocks");
  m.whole = [module](const torch::Tensor& x) { return module->forward({x}).toTensor(); };
  m.origin = o.file;
  m.script = module;
  return m;
}

} // namespace

std::vector<const ModelUnit*> Model::units(const Cut& begin, const Cut& end) const {
  std::vector<const ModelUnit*> out;
  for (Cut c = begin; c < end;) {
    out.push_back(&unit(c));
    if (++c.sub == blocks[c.block].units.size()) c = {c.block + 1, 0};
  }
  return out;
}

void Model::set_training(bool on) const {
  for (const ModelBlock& block : blocks)
    for (const ModelUnit& unit : block.units)
      if (unit.set_training) unit.set_training(on);
}

ModelProfile Model::skeleton() const {
  ModelProfile p;
  p.name = name;
  for (const ModelBlock& b : blocks) {
    Block block;
    block.name = b.name;
    if (b.has_sub_blocks)
      for (const ModelUnit& u : b.units)
        block.sub_blocks.push_back(SubBlock{.name = u.name});
    p.blocks.push_back(std::move(block));
  }
  return p;
}

Result<Model> build_model(const ModelOptions& options, const DataShape& shape, std::uint64_t seed) {
  torch::manual_seed(seed);
  Result<Model> model = Error::bad_key("model.zoo", "the job names no model to train");
  switch (options.zoo) {
  case ZooModel::mlp: model = mlp(options, shape); break;
  case ZooModel::cnn: model = cnn(options, shape); break;
  case ZooModel::resnet: model = resnet(options, shape); break;
  case ZooModel::gpt: model = gpt(options, shape); break;
  case ZooModel::torchscript: model = torchscript(options); break;
  case ZooModel::none: break;
  }
  if (model) model->name = option_name(options.zoo);
  return model;
}

namespace {

std::string dimensions(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (auto d : shape)
    out += (out.empty() ? "" : " × ") + std::to_string(d);
  return out;
}

/// One sample through every unit, in evaluation mode and without gradients: a model
/// that does not fit the data (images too small for its pooling, a TorchScript module
/// that expects another shape) fails here, as bad input, not inside a run.
Status check_fit(const Model& model, const DataShape& shape) {
  std::vector<std::int64_t> batch{1};
  batch.insert(batch.end(), shape.sample.begin(), shape.sample.end());
  const auto fail = [&](const std::string& why) {
    return Error::bad_key("model.zoo", "'" + model.name + "' does not fit " + samples_of(shape) + ": " + why);
  };
  try {
    torch::NoGradGuard no_grad;
    // Two samples, random, so that blocks called in another order show; drawn from a
    // generator of their own, so that the run's draws (dropout) stay as they were.
    batch.front() = 2;
    at::Generator draws = at::detail::createCPUGenerator(1);
    const torch::Tensor input =
        shape.tokens ? torch::randint(shape.classes, batch, draws, torch::kLong) : torch::randn(batch, draws);
    torch::Tensor x = input;
    model.set_training(false);
    for (const ModelBlock& block : model.blocks)
      for (const ModelUnit& unit : block.units)
        x = unit.forward(x);
    const torch::Tensor whole = model.whole ? model.whole(input) : x;
    model.set_training(true);
    if (x.dim() < 2 || x.size(0) != 2 || x.size(-1) != shape.classes)
      return fail("its output for 2 samples is " + dimensions(x.sizes().vec()) + ", not " +
                  std::to_string(shape.classes) + " logits per sample" +
                  (shape.tokens ? " and position (the vocabulary: data.vocabulary)" : " (data.classes)"));
    if (!whole.sizes().equals(x.sizes()) || !torch::allclose(whole, x, 1e-4, 1e-5))
      return Error::bad_input(model.origin + ": its forward is not its children called in order, one after " +
                              "another, which is how actorpipe runs it across stages: " + export_advice);
  } catch (const std::exception& e) {
    return fail(text::message_of(e));
  }
  return Ok{};
}

} // namespace

Result<Model> build_model(const JobSpec& job, const DataShape& shape) {
  Result<Model> model = Error::bad_input("");
  try {
    model = build_model(job.model, shape, job.job.seed);
  } catch (const std::exception& e) {
    model = Error::bad_key("model.zoo", "'" + std::string(option_name(job.model.zoo)) +
                                            "' cannot be built for samples of " + dimensions(shape.sample) + ": " +
                                            text::message_of(e));
  }
  Status fits = model ? check_fit(*model, shape) : Status(Ok{});
  if (model && fits) return model;
  return config::place_in_job(job, model ? std::move(fits).error() : std::move(model).error(), "model");
}

} // namespace actorpipe::train
