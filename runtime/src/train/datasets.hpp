#pragma once

/// Training and test data held as tensors: Fashion-MNIST from its gzipped IDX files,
/// synthetic samples from a seeded teacher, and windows of byte-level text or of a token
/// file for language models.
/// LibTorch inside: include only from the training code.

#include "train/model_zoo.hpp"

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/training.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace actorpipe::train {

/// Samples along the first dimension of both tensors.
struct Split {
  torch::Tensor inputs;
  torch::Tensor labels;
  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

struct DataSets {
  Split train;
  Split test;
  DataShape shape;
};

/// Where the Debian package `dataset-fashion-mnist` puts the files.
inline constexpr const char* default_fashion_mnist = "/usr/share/datasets/fashion-mnist";

/// Loads what `data` names. A missing, truncated or malformed file is an error naming
/// the file.
Result<DataSets> load_data(const DataOptions& data, const ModelOptions& model);

/// The order in which one epoch visits the samples: a permutation drawn from
/// (seed, epoch) when shuffling, so a resumed run sees the same order.
std::vector<std::int64_t> epoch_order(std::int64_t samples, std::uint64_t seed, std::uint64_t epoch, bool shuffle);

} // namespace actorpipe::train

namespace actorpipe {

struct TrainingData {
  train::DataSets sets;
};

namespace train {

/// `given` when the caller loaded the job's data already, else the data read now.
Result<std::shared_ptr<const TrainingData>> given_or_loaded(const JobSpec& job,
                                                            std::shared_ptr<const TrainingData> given);

} // namespace train

} // namespace actorpipe
