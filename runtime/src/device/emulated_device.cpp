/// EmulatedDevice: an emulated stage's modelled times in wall time.

#include "device/emulated_device.hpp"

#include "sim/emulated_links.hpp"
#include "sim/straggled_time.hpp"

namespace actorpipe::device {

EmulatedDevice::EmulatedDevice(Model model, Clock::time_point origin, std::size_t pipeline, std::size_t stage)
    : model_(std::move(model)), origin_(origin) {
  if (model_.stragglers) random_.seed(model_.stragglers->seed * 1000003 + pipeline * 1009 + stage);
}

double EmulatedDevice::modelled_ms(Clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(t - origin_).count() / model_.dilation;
}

EmulatedDevice::Clock::time_point EmulatedDevice::wall(double modelled_ms) const {
  return origin_ + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double, std::milli>(modelled_ms * model_.dilation));
}

EmulatedDevice::Clock::time_point EmulatedDevice::action_end(const Action& action, Clock::time_point started) {
  double ms = action.op == Op::forward ? model_.forward_fixed_ms + model_.forward_ms_per_sample * action.size
                                       : backward_share(action.op, model_.input_gradient_share) *
                                             (model_.backward_fixed_ms + model_.backward_ms_per_sample * action.size);
  if (model_.stragglers) ms = straggled_ms(*model_.stragglers, model_.device, modelled_ms(started), ms, random_);
  return started +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms * model_.dilation));
}

std::optional<EmulatedDevice::Clock::duration>
EmulatedDevice::delivery_delay(const std::optional<DeviceId>& to, std::uint64_t bytes, Clock::time_point now) {
  if (!model_.links || !to) return std::nullopt;
  const double at = model_.links->arrival_ms(model_.device, *to, bytes, modelled_ms(now));
  if (at <= modelled_ms(now)) return std::nullopt;
  return wall(at) - now;
}

std::optional<EmulatedDevice::Clock::time_point> EmulatedDevice::allreduce_end(Clock::time_point ready) {
  if (!model_.links || model_.replica_devices.empty()) return std::nullopt;
  return wall(model_.links->allreduce_done_ms(model_.replica_devices, model_.parameter_bytes, modelled_ms(ready)));
}

} // namespace actorpipe::device
