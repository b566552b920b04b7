#pragma once

/// The learning rate of each step of a run (train.lr, train.lr_schedule,
/// train.warmup_steps): a linear warm-up, then constant, linear or cosine decay to 0 at
/// the run's last step, as PyTorch's LinearLR and CosineAnnealingLR chained by
/// SequentialLR compute it. No LibTorch: every stage and the reference trainer ask it.

#include <actorpipe/job.hpp>

#include <cstdint>

namespace actorpipe::train {

/// The factor of train.lr at step `step` (the run's, 1-based) of a run of
/// `total_steps`: (step / warmup_steps) while warming up; then 1 (constant),
/// (total − step + 1) / (total − warmup) (linear), or ½ (1 + cos(π (step − 1 − warmup) /
/// (total − warmup))) (cosine).
double lr_factor(const TrainOptions& train, std::uint64_t step, std::uint64_t total_steps);

/// train.lr × lr_factor().
inline double lr_at(const TrainOptions& train, std::uint64_t step, std::uint64_t total_steps) {
  return train.lr * lr_factor(train, step, total_steps);
}

} // namespace actorpipe::train
