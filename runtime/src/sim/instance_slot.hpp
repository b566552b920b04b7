#pragma once

/// An instance as the engine's hot path reads and writes it. At 100,000 devices an
/// iteration's events sweep memory several times the size of the caches, so what one
/// event touches should sit in as few cache lines as it can: an instance's costs and
/// where it stands share two lines.

#include "sim/engine.hpp"

#include <cstdint>
#include <limits>
#include <vector>

namespace actorpipe::sim {

/// One instance as the hot path sees it: what its actions cost on its device (from
/// its Instance) and where it stands in its schedule.
struct alignas(64) Slot {
  explicit Slot(const Instance& instance)
      : forward_ms_per_sample(instance.forward_ms_per_sample), backward_ms_per_sample(instance.backward_ms_per_sample),
        forward_fixed_ms(instance.forward_fixed_ms), backward_fixed_ms(instance.backward_fixed_ms),
        input_gradient_share(instance.input_gradient_share), send_bytes_per_sample(instance.send_bytes_per_sample),
        grad_bytes_per_sample(instance.grad_bytes_per_sample),
        processor(static_cast<std::uint32_t>(instance.processor)), device(static_cast<std::uint32_t>(instance.device)),
        stage(static_cast<std::uint32_t>(instance.stage)) {}

  double forward_ms_per_sample, backward_ms_per_sample, forward_fixed_ms, backward_fixed_ms;
  double input_gradient_share;
  double send_bytes_per_sample, grad_bytes_per_sample;
  std::uint32_t processor, device;

  double idle_since = 0;
  double action_start = 0;
  double action_ms = 0;
  double last_backward = 0;
  double busy_ms = 0; ///< computing, over the run
  /// A schedule that places steps, in lockstep: when its stage's round ended, this
  /// iteration (NaN until it has).
  double synced_at = std::numeric_limits<double>::quiet_NaN();
  std::uint32_t next = 0; ///< action index
  std::uint32_t iteration = 0;
  std::uint32_t stage;
  bool busy = false;
  bool waiting_step = false; ///< finished its actions, waiting for sync and the step
};
static_assert(sizeof(Slot) == 128, "a slot is two cache lines");

} // namespace actorpipe::sim
