/// The learning rate's schedule over a run's steps.

#include "train/lr_schedule.hpp"

#include <cmath>
#include <numbers>

namespace actorpipe::train {

double lr_factor(const TrainOptions& train, std::uint64_t step, std::uint64_t total_steps) {
  // k: the steps taken before this one, as PyTorch's schedulers count (last_epoch).
  const double k = static_cast<double>(step > 0 ? step - 1 : 0);
  const double warmup = static_cast<double>(train.warmup_steps);
  if (k < warmup) return (k + 1) / warmup;
  const double decay = static_cast<double>(total_steps) - warmup; // steps after the warm-up
  if (train.lr_schedule == LrSchedule::constant || decay <= 0) return 1.0;
  const double done = std::min(k - warmup, decay) / decay;
  if (train.lr_schedule == LrSchedule::linear) return 1.0 - done;
  return 0.5 * (1.0 + std::cos(std::numbers::pi * done));
}

} // namespace actorpipe::train
