#pragma once

/// The compute of one stage of one pipeline: its units of the model, the activations
/// it keeps between a micro-batch's forward and backward, and its optimizer. A stage
/// actor drives it; no LibTorch types show here.

#include "train/stage_computation.hpp"

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/model_profile.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::train {

struct Model;

struct StageSetup {
  std::size_t pipeline = 0;
  std::size_t stage = 0;
  std::size_t stages = 1;
  Cut begin;
  Cut end;
  TrainOptions train;
  int threads = 1;        ///< LibTorch intra-op threads for this stage's compute
  std::uint64_t seed = 0; ///< the job's: with the replica and the forward, it seeds dropout
  int cuda_device = -1;   ///< the CUDA device it computes on (device/placement.hpp); -1: the CPU
  /// Whether another stage of this process computes on that CUDA device too (train.cuda_graphs
  /// "auto" replays graphs there).
  bool gpu_shared = false;
  /// By unit of the stage: whether its forward runs again before its backward instead of
  /// keeping its activations (plan.recompute, recomputed_units()); empty: none does.
  std::vector<bool> recomputed = {};
};

class StageWorker final : public StageComputation {
public:
  /// The units [setup.begin, setup.end) of `model`, which the worker keeps alive.
  StageWorker(std::shared_ptr<const Model> model, const StageSetup& setup);
  ~StageWorker() override;
  StageWorker(const StageWorker&) = delete;
  StageWorker& operator=(const StageWorker&) = delete;

  const StageSetup& setup() const;
  bool first() const { return setup().stage == 0; }
  bool last() const { return setup().stage + 1 == setup().stages; }

  Payload forward(std::size_t micro, const Payload& input) override;
  /// The mean cross-entropy against `labels`, summed into the step's loss as is, and
  /// kept multiplied by `loss_scale` for the backward (so that gradients over all
  /// micro-batches and pipelines add up to the batch mean).
  void forward_loss(std::size_t micro, const Payload& input, const Payload& labels, double loss_scale,
                    std::uint32_t samples) override;
  double take_loss_sum() override;
  Payload backward(std::size_t micro, const Payload& output_gradient) override;
  Payload backward_input(std::size_t micro, const Payload& output_gradient) override;
  void backward_weight(std::size_t micro) override;
  std::size_t stashed() const override;

  double gradient_square_sum() override;
  /// The optimizer step; under fp16, skipped where the gradients overflowed.
  void step(std::uint64_t step, double gradient_norm) override;
  /// The run's first step and its steps, which the learning rate's schedule spans
  /// (train.lr_schedule): known once the run has read its checkpoint and options,
  /// after the workers are made.
  void set_schedule(std::uint64_t first_step, std::uint64_t total_steps);
  /// Steps skipped so far because fp16 gradients overflowed.
  std::uint64_t skipped_steps() const;
  /// Waits until the work queued on its GPU stream is done: before another thread
  /// (a sync round) touches its tensors. Nothing on the CPU.
  void settle() const;

  /// Its parameters, buffers and optimizer state as bytes (LibTorch's archive): what a
  /// worker process hands the coordinator, which evaluates and checkpoints.
  std::string state_bytes() const;
  /// Takes them back; throws std::runtime_error for bytes of another stage's shapes.
  void load_state_bytes(const std::string& bytes);

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace actorpipe::train
