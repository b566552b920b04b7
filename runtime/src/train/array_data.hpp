#pragma once

/// Data sets handed over as arrays (an npy folder's files, a data set plugin's arrays):
/// what they must be to train on, checked before anything does, and the test split.
/// LibTorch inside: include only from the training code.

#include "train/datasets.hpp"

#include <actorpipe/data_array.hpp>

#include <optional>
#include <string>

namespace actorpipe::train {

/// One split's arrays as their source gave them, each with the name errors give it
/// (a file's path).
struct NamedArrays {
  torch::Tensor inputs;
  torch::Tensor labels;
  std::string inputs_name;
  std::string labels_name;
};

/// LibTorch's type for the elements.
torch::ScalarType scalar_type(ElementType type);

/// Inputs of a floating or boolean type are features, of an integer type token ids;
/// labels, of an integer type, are one class per sample or, for token ids, one per
/// position. `test` absent: the last tenth of `train`. The classes are
/// `data.classes`, else the largest label + 1; token ids must be below
/// `data.vocabulary` where it is set. Refused, naming the array: a sample without a
/// shape of its own, labels that are not integers or not one per sample, a test split
/// shaped or typed unlike the training one, a label outside the classes, a negative
/// id, and features that are not finite.
Result<DataSets> array_data_sets(NamedArrays train, std::optional<NamedArrays> test, const DataOptions& data);

} // namespace actorpipe::train
