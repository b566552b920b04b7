/// GradientBuckets: a replica's gradients as views of one flat buffer.

#include "train/gradient_buckets.hpp"

namespace actorpipe::train {

bool GradientBuckets::bind(std::vector<torch::Tensor>& parameters) {
  if (bound()) return true;
  std::int64_t total = 0;
  const torch::Tensor* kind = nullptr;
  for (const torch::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    if (kind && (p.scalar_type() != kind->scalar_type() || p.device() != kind->device())) return false;
    kind = &p;
    total += p.numel();
  }
  if (!kind) return false;
  for (torch::Tensor& buffer : buffers_)
    buffer = torch::zeros({total}, kind->options().requires_grad(false));
  torch::NoGradGuard no_grad;
  std::int64_t at = 0;
  for (const torch::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    if (p.grad().defined()) buffers_[current_].narrow(0, at, p.numel()).view_as(p).copy_(p.grad());
    at += p.numel();
  }
  point(parameters, buffers_[current_]);
  return true;
}

void GradientBuckets::next(std::vector<torch::Tensor>& parameters) {
  current_ = 1 - current_;
  buffers_[current_].zero_();
  point(parameters, buffers_[current_]);
}

void GradientBuckets::point(std::vector<torch::Tensor>& parameters, const torch::Tensor& buffer) const {
  std::int64_t at = 0;
  for (torch::Tensor& p : parameters) {
    if (!p.requires_grad()) continue;
    p.mutable_grad() = buffer.narrow(0, at, p.numel()).view_as(p);
    at += p.numel();
  }
}

} // namespace actorpipe::train
