#pragma once

/// A tensor as actors pass it around: a shared handle, so that sending an activation
/// or a gradient to another actor of the same process copies nothing. Its contents are
/// LibTorch's (tensor_box.hpp); code that only routes payloads needs no LibTorch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::train {

struct TensorBox;
using Payload = std::shared_ptr<const TensorBox>;

/// Rows of one training batch (Session::batch): what a process with the same data
/// makes itself (Session::rows), so that only where they are crosses processes.
struct BatchRows {
  std::uint64_t epoch = 0, index = 0; ///< the batch: Session::batch(epoch, index)
  std::uint32_t first = 0, count = 0; ///< its rows [first, first + count)
  bool labels = false;                ///< its labels, else its inputs

  bool operator==(const BatchRows&) const = default;
};

/// Where `payload`'s rows come from when they are a batch's (Session::batch made it, or
/// split_rows cut it from one); null otherwise.
const BatchRows* batch_rows(const Payload& payload);

/// Whether `payload` holds a tensor: false for a batch that only says which rows it is
/// (Session::batch_rows_only).
bool has_tensor(const Payload& payload);

/// Consecutive slices of `payload`'s rows (samples), `sizes[i]` rows each: views that
/// share its storage (and say which rows of a batch they are, where it does). A batch
/// with no tensor (Session::batch_rows_only) gives slices that only say which rows.
std::vector<Payload> split_rows(const Payload& payload, const std::vector<std::uint32_t>& sizes);

/// Bytes as a payload (a tensor of uint8), to send where tensors go; and back.
Payload bytes_payload(const std::string& bytes);
std::string payload_text(const Payload& payload);

/// The bytes of `payload`'s tensor (what a transfer of it between devices moves).
std::uint64_t payload_bytes(const Payload& payload);

} // namespace actorpipe::train
