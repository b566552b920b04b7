/// StageDevice: the CPU, or a CUDA device with the stage's own stream and events.

#include "device/stage_device.hpp"

#include "base/text.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <stdexcept>
#include <string>

namespace actorpipe::device {

StageDevice StageDevice::cuda(int index) {
  if (!torch::cuda::is_available())
    throw std::runtime_error("cuda:" + std::to_string(index) + ": this LibTorch sees no CUDA device");
  if (index < 0 || index >= static_cast<int>(torch::cuda::device_count()))
    throw std::runtime_error("cuda:" + std::to_string(index) + ": this machine has " +
                             std::to_string(torch::cuda::device_count()) + " CUDA devices");
  StageDevice d;
  d.device_ = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
  d.stream_ = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStreamFromGlobalPool(d.device_, false);
  return d;
}

std::optional<c10::StreamGuard> StageDevice::enter() const {
  if (!stream_) return std::nullopt;
  // What other threads queued on the device's default stream (a sync round's sums, an
  // evaluation) comes first; on the GPU, the host goes on.
  const auto* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  c10::Event after(c10::DeviceType::CUDA);
  after.record(cuda->getDefaultStream(device_));
  after.block(*stream_);
  return std::optional<c10::StreamGuard>(std::in_place, *stream_);
}

torch::Tensor StageDevice::take(const torch::Tensor& tensor, const c10::Event* ready) const {
  if (ready && stream_) ready->block(*stream_);
  if (!tensor.defined() || tensor.device() == device_) {
    // Used on this stage's stream: the allocator must not hand its memory to the
    // producer's stream again before this stream is done with it.
    if (stream_ && tensor.defined()) tensor.record_stream(*stream_);
    return tensor;
  }
  // From page-locked host memory, or another GPU, on this stage's (current) stream.
  torch::Tensor here = tensor.to(device_, /*non_blocking=*/tensor.is_pinned() || tensor.is_cuda());
  if (tensor.is_cuda() && stream_) tensor.record_stream(*stream_);
  return here;
}

std::shared_ptr<const c10::Event> StageDevice::record() const {
  if (!stream_) return nullptr;
  auto ready = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
  ready->record(*stream_);
  return ready;
}

void StageDevice::adopt(torch::Tensor& tensor) const {
  if (tensor.device() == device_) return;
  torch::NoGradGuard no_grad;
  tensor.set_data(tensor.to(device_));
}

void StageDevice::settle() const {
  if (stream_) stream_->synchronize();
}

torch::Tensor pinned_if(bool pin, torch::Tensor rows) { return pin ? rows.pin_memory() : rows; }

} // namespace actorpipe::device
