/// Adam stepping every parameter of a device in one fused kernel.

#include "train/fused_adam.hpp"

#include <vector>

namespace actorpipe::train {

namespace {

/// The tensors one `_fused_adam_` call takes: they share a device and a dtype.
struct Bucket {
  torch::Device device;
  torch::Dtype dtype;
  std::vector<torch::Tensor> parameters, gradients, averages, squares, maxima, counts;
};

Bucket& bucket_of(std::vector<Bucket>& buckets, const torch::Tensor& p) {
  for (Bucket& b : buckets)
    if (b.device == p.device() && b.dtype == p.scalar_type()) return b;
  return buckets.emplace_back(Bucket{p.device(), p.scalar_type(), {}, {}, {}, {}, {}, {}});
}

} // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    const at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (torch::optim::OptimizerParamGroup& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    std::vector<Bucket> buckets;
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "FusedAdam takes dense gradients only");
      const void* key = p.unsafeGetTensorImpl();
      auto& slot = state()[const_cast<void*>(key)];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& s = static_cast<torch::optim::AdamParamState&>(*slot);
      if (options.amsgrad() && !s.max_exp_avg_sq().defined())
        s.max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      DeviceCount& count = counts_[key];
      if (!count.count.defined() || count.step != s.step())
        count.count = torch::full({}, static_cast<double>(s.step()), torch::dtype(torch::kFloat).device(p.device()));
      s.step(s.step() + 1);
      count.step = s.step();
      Bucket& b = bucket_of(buckets, p);
      b.parameters.push_back(p);
      b.gradients.push_back(p.grad());
      b.averages.push_back(s.exp_avg());
      b.squares.push_back(s.exp_avg_sq());
      if (options.amsgrad()) b.maxima.push_back(s.max_exp_avg_sq());
      b.counts.push_back(count.count);
    }
    const auto [beta1, beta2] = options.betas();
    for (Bucket& b : buckets) {
      at::_foreach_add_(b.counts, 1);
      at::_fused_adam_(b.parameters, b.gradients, b.averages, b.squares, b.maxima, b.counts, options.lr(), beta1, beta2,
                       options.weight_decay(), options.eps(), options.amsgrad(), /*maximize=*/false);
    }
  }
  return loss;
}

} // namespace actorpipe::train
