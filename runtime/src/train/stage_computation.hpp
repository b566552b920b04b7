#pragma once

/// What a stage actor computes, behind an interface: a stage's LibTorch work in a run
/// (StageWorker), a scripted fake in the actor protocol tests, which so step the actors
/// one message at a time without LibTorch's compute.

#include "train/payload.hpp"

#include <cstddef>
#include <cstdint>

namespace actorpipe::train {

class StageComputation {
public:
  virtual ~StageComputation() = default;

  /// Forward of micro-batch `micro`, keeping what its backward needs; returns the
  /// activation for the next stage. Not for the last stage.
  virtual Payload forward(std::size_t micro, const Payload& input) = 0;
  /// The last stage's forward: the micro-batch's mean loss against `labels`, times
  /// `samples`, added to the step's loss sum; its backward starts from that loss times
  /// `loss_scale`.
  virtual void forward_loss(std::size_t micro, const Payload& input, const Payload& labels, double loss_scale,
                            std::uint32_t samples) = 0;
  /// The step's loss sum so far (Σ mean loss × samples), which it then clears: read once
  /// a step, so that a GPU is waited for at the step's end, not at each micro-batch.
  virtual double take_loss_sum() = 0;
  /// Backward of micro-batch `micro` from the gradient of its output (none on the last
  /// stage); returns the gradient of its input (none on the first stage).
  virtual Payload backward(std::size_t micro, const Payload& output_gradient) = 0;
  /// The first half of a split backward (I): the gradient of micro-batch `micro`'s
  /// input alone (none on the first stage), keeping what its weights' gradients need.
  virtual Payload backward_input(std::size_t micro, const Payload& output_gradient) = 0;
  /// The second half (W): micro-batch `micro`'s weight gradients, added to those of the
  /// step; then its activations go.
  virtual void backward_weight(std::size_t micro) = 0;
  /// Micro-batches whose activations it keeps for their backward (a split one's W
  /// included).
  virtual std::size_t stashed() const = 0;
  /// Σ of the squares of its gradients, final for the step (reduced over the replicas,
  /// unscaled under fp16): its part of the model's gradient norm that clipping
  /// (train.clip_norm) needs from every stage; infinite or NaN where they overflowed.
  virtual double gradient_square_sum() = 0;
  /// The optimizer step `step` (the run's, 1-based, which the learning rate's schedule
  /// reads) on the accumulated gradients, which it then clears. Under clipping
  /// (train.clip_norm) they are clipped by `gradient_norm`, the norm of the model's
  /// gradient over every stage; without, it is not read.
  virtual void step(std::uint64_t step, double gradient_norm) = 0;
};

} // namespace actorpipe::train
