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

/// Consecutive slices of `payload`'s rows (samples), `sizes[i]` rows each: views that
/// share its storage.
std::vector<Payload> split_rows(const Payload& payload, const std::vector<std::uint32_t>& sizes);

/// Bytes as a payload (a tensor of uint8), to send where tensors go; and back.
Payload bytes_payload(const std::string& bytes);
std::string payload_text(const Payload& payload);

/// The bytes of `payload`'s tensor (what a transfer of it between devices moves).
std::uint64_t payload_bytes(const Payload& payload);

} // namespace actorpipe::train
