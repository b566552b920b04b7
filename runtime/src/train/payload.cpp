/// Payload operations that need LibTorch.

#include "train/tensor_box.hpp"

#include <cstring>

namespace actorpipe::train {

const BatchRows* batch_rows(const Payload& payload) { return payload && payload->rows ? &*payload->rows : nullptr; }

bool has_tensor(const Payload& payload) { return payload && payload->tensor.defined(); }

std::vector<Payload> split_rows(const Payload& payload, const std::vector<std::uint32_t>& sizes) {
  std::vector<Payload> out;
  out.reserve(sizes.size());
  std::int64_t at = 0;
  for (std::uint32_t n : sizes) {
    TensorBox part{payload->tensor.defined() ? payload->tensor.narrow(0, at, n) : torch::Tensor(), payload->rows};
    if (part.rows) {
      part.rows->first += static_cast<std::uint32_t>(at);
      part.rows->count = n;
    }
    out.push_back(std::make_shared<const TensorBox>(std::move(part)));
    at += n;
  }
  return out;
}

Payload bytes_payload(const std::string& bytes) {
  torch::Tensor t = torch::empty({static_cast<std::int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return wrap(std::move(t));
}

std::string payload_text(const Payload& payload) {
  const torch::Tensor t = payload->tensor.contiguous();
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel() * t.element_size()));
}

std::uint64_t payload_bytes(const Payload& payload) {
  return payload ? static_cast<std::uint64_t>(payload->tensor.numel()) * payload->tensor.element_size() : 0;
}

} // namespace actorpipe::train
