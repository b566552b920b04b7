#pragma once

/// `data.dataset = "npy"`: a folder of NumPy arrays, memory-mapped.
/// LibTorch inside: include only from the training code.

#include "train/datasets.hpp"

namespace actorpipe::train {

/// `inputs.npy` and `labels.npy` of the folder `data.path`, and its `test_inputs.npy`
/// and `test_labels.npy` where it has both. The files are mapped, not read: a sample's
/// pages come in when a batch takes it, and stay in its type until then.
Result<DataSets> npy_data(const DataOptions& data);

} // namespace actorpipe::train
