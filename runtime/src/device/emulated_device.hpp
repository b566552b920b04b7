#pragma once

/// The time half of an emulated device: how long its actions take and when what it
/// sends arrives, by its model (the stage's figures over the device's speed, stragglers,
/// the emulated links), in wall time dilated by the emulation's factor. The stage actor
/// asks it when an action may end and when a message may be delivered; the tensors
/// themselves stay on the CPU (device/stage_device.hpp). No LibTorch, no CAF here.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/schedule.hpp>
#include <actorpipe/simulator.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace actorpipe::sim {
class EmulatedLinks;
}

namespace actorpipe::device {

class EmulatedDevice {
public:
  using Clock = std::chrono::steady_clock;

  /// A stage on an emulated device, as the run sets it up.
  struct Model {
    /// The stage's figures over the device's speed; the fixed times include the plan's
    /// cost per action (plan.action_overhead_ms), as the simulator counts it.
    double forward_fixed_ms = 0, forward_ms_per_sample = 0;
    double backward_fixed_ms = 0, backward_ms_per_sample = 0;
    double input_gradient_share = unmeasured_input_gradient_share; ///< of a backward, an I's
    double dilation = 1;                                           ///< wall ms per modelled ms
    DeviceId device = 0;
    /// Slow windows and random delays on top of the model, drawn by the stage from
    /// seed + its place in the plan; none: the model alone.
    std::shared_ptr<const Stragglers> stragglers{};
    /// The devices of the pipeline's stages before and after this one, where they are
    /// emulated too: activations and gradients to them arrive when `links` says.
    std::optional<DeviceId> previous_device{}, next_device{};
    std::shared_ptr<sim::EmulatedLinks> links{};
    /// The devices of this stage's replicas, by pipeline, where there are several and all
    /// are emulated: a lockstep round's all-reduce of `parameter_bytes` then takes what
    /// `links` says the ring takes, as the simulator charges it. Empty: nothing.
    std::vector<DeviceId> replica_devices{};
    std::uint64_t parameter_bytes = 0;
  };

  /// Stage `stage` of pipeline `pipeline`, whose run's modelled time starts at `origin`.
  EmulatedDevice(Model model, Clock::time_point origin, std::size_t pipeline, std::size_t stage);

  const Model& model() const { return model_; }

  /// When `action`, started at `started`, may end: its modelled time (stragglers
  /// included), dilated. An action that took longer is not padded.
  Clock::time_point action_end(const Action& action, Clock::time_point started);

  /// How long a tensor of `bytes` sent now to the neighbour on `to` travels on the
  /// emulated links (dilated); none where it arrives at once (`to` not emulated).
  std::optional<Clock::duration> delivery_delay(const std::optional<DeviceId>& to, std::uint64_t bytes,
                                                Clock::time_point now);

  /// When the replicas' ring all-reduce, ready at `ready`, is done (dilated); none where
  /// the replicas are not all emulated.
  std::optional<Clock::time_point> allreduce_end(Clock::time_point ready);

private:
  double modelled_ms(Clock::time_point t) const;
  Clock::time_point wall(double modelled_ms) const;

  Model model_;
  Clock::time_point origin_;
  std::mt19937_64 random_; ///< draws the stragglers' random delays
};

} // namespace actorpipe::device
