/// Payload operations that need LibTorch.

#include "train/tensor_box.hpp"

namespace actorpipe::train {

std::vector<Payload> split_rows(const Payload& payload, const std::vector<std::uint32_t>& sizes) {
  std::vector<Payload> out;
  out.reserve(sizes.size());
  std::int64_t at = 0;
  for (std::uint32_t n : sizes) {
    out.push_back(wrap(payload->tensor.narrow(0, at, n)));
    at += n;
  }
  return out;
}

std::uint64_t payload_bytes(const Payload& payload) {
  return payload ? static_cast<std::uint64_t>(payload->tensor.numel()) * payload->tensor.element_size() : 0;
}

} // namespace actorpipe::train
