/// AutocastScope and LossScaler.

#include "device/precision.hpp"

#include <ATen/autocast_mode.h>

namespace actorpipe::device {

AutocastScope::AutocastScope(Precision precision, c10::Device device) {
  if (precision == Precision::fp32) return;
  on_ = true;
  type_ = device.type();
  was_enabled_ = at::autocast::is_autocast_enabled(type_);
  was_type_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::set_autocast_dtype(type_, precision == Precision::bf16 ? at::kBFloat16 : at::kHalf);
}

AutocastScope::~AutocastScope() {
  if (!on_) return;
  at::autocast::set_autocast_enabled(type_, was_enabled_);
  at::autocast::set_autocast_dtype(type_, was_type_);
  at::autocast::clear_cache();
}

LossScaler::LossScaler(c10::Device device)
    : scale_(torch::full({1}, 65536.0, torch::TensorOptions().dtype(torch::kFloat).device(device))),
      growth_(torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt).device(device))) {}

bool LossScaler::unscale(const std::vector<torch::Tensor>& gradients) {
  torch::NoGradGuard no_grad;
  torch::Tensor found = torch::zeros({1}, scale_.options());
  if (!gradients.empty()) at::_amp_foreach_non_finite_check_and_unscale_(gradients, found, scale_.reciprocal());
  at::_amp_update_scale_(scale_, growth_, found, 2.0, 0.5, 2000);
  const bool finite = found.item<float>() == 0.0f;
  if (!finite) skipped_.fetch_add(1, std::memory_order_relaxed);
  return finite;
}

} // namespace actorpipe::device
