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
  /// The mean cross-entropy against `labels`, returned as is, and kept multiplied by
  /// `loss_scale` for the backward (so that gradients over all micro-batches and
  /// pipelines add up to the batch mean).
  double forward_loss(std::size_t micro, const Payload& input, const Payload& labels, double loss_scale) override;
  Payload backward(std::size_t micro, const Payload& output_gradient) override;
  /// Micro-batches whose activations are kept.
  std::size_t stashed() const;

  void step() override;

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

/// Replaces the gradients of every replica by their sum, computed in place in the first
/// replica's gradient, which every replica then holds until its step. Each replica's
/// loss is scaled by its share of the batch, so the sum is the gradient of the whole
/// batch's mean loss: the replicas' average, weighted by their shares.
/// `scale` multiplies the sum: a group of some of the pipelines scales its sum up to the
/// whole batch's.
void sum_gradients(const std::vector<StageWorker*>& replicas, double scale = 1);

/// Multiplies the replica's gradients by `factor`: a pipeline that steps on its own
/// gradient scales its share of the batch's up to its own batch's mean.
void scale_gradients(StageWorker& replica, double factor);

/// Replaces every replica's parameters by their mean.
void average_parameters(const std::vector<StageWorker*>& replicas);

/// A stage's centre variable for elastic averaging: a copy of its parameters that the
/// replicas are pulled towards and that is pulled towards them.
class ElasticCentre {
public:
  /// Starts at `initial`'s parameters (every replica starts from the same).
  explicit ElasticCentre(StageWorker& initial);
  ~ElasticCentre();
  ElasticCentre(ElasticCentre&&) noexcept;
  /// With d_p = x_p − c for each replica p of `group`: x_p ← x_p − alpha · d_p and
  /// c ← c + alpha · Σ_p d_p.
  void move(const std::vector<StageWorker*>& group, double alpha);
  /// Exchanges the centre's parameters with `replica`'s (twice: as they were).
  void swap(StageWorker& replica);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Makes every replica's buffers (BatchNorm's running statistics) the first replica's
/// (`how` "broadcast") or, for floating-point buffers, their mean ("average"), as
/// TrainOptions::buffers says. Each replica updated its own from its own micro-batches.
void agree_buffers(const std::vector<StageWorker*>& replicas, const std::string& how);

} // namespace actorpipe::train
