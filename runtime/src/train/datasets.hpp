#pragma once

/// Training and test data held as tensors: Fashion-MNIST from its gzipped IDX files,
/// synthetic samples from a seeded teacher, windows of byte-level text or of a token
/// file for language models, and arrays from an npy folder (npy_data.hpp) or a data
/// set plugin (plugin_data.hpp).
/// LibTorch inside: include only from the training code.

#include "train/model_zoo.hpp"

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/training.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace actorpipe::train {

/// Samples along the first dimension of both tensors, in the type their source has
/// (model_inputs() and model_labels() give what a model takes).
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

/// Loads what `job.data` names (a data set plugin found in `plugins`; null: the default
/// folders and the job's plan.plugin_path). A missing, truncated or malformed file is
/// an error naming the file, placed in the job file at data.path (data.plugin for a
/// plugin's data).
Result<DataSets> load_data(const JobSpec& job, const PluginRegistry* plugins = nullptr);

/// A split's inputs as models take them: float32 features, or int64 token ids. An npy
/// file or a plugin's array keeps its own type until a batch is taken from it.
torch::Tensor model_inputs(const torch::Tensor& stored);
/// A split's labels as the loss takes them: int64.
torch::Tensor model_labels(const torch::Tensor& stored);

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
Result<std::shared_ptr<const TrainingData>>
given_or_loaded(const JobSpec& job, std::shared_ptr<const TrainingData> given, const PluginRegistry* plugins = nullptr);

} // namespace train

} // namespace actorpipe
