#pragma once

/// What a stage computes in (train.precision), and what a measured profile was measured
/// in: fp32 throughout, or autocast to bf16 or fp16 for the compute with fp32 master
/// weights and optimizer state (fp16 with dynamic loss scaling). Autocast is LibTorch's
/// CUDA autocast: on the CPU only fp32 runs.

#include <optional>
#include <string_view>

namespace actorpipe {

enum class Precision { fp32, bf16, fp16 };

/// "fp32", "bf16", "fp16".
inline const char* precision_name(Precision p) {
  return p == Precision::bf16 ? "bf16" : p == Precision::fp16 ? "fp16" : "fp32";
}

/// The precision `name` names ("fp32", "bf16", "fp16"); none for any other text.
inline std::optional<Precision> precision_named(std::string_view name) {
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

} // namespace actorpipe
