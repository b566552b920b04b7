#pragma once

/// A checkpoint on disk: the session's archive sealed with a CRC-32 of its bytes, so
/// that a file damaged on disk (a flipped byte in a tensor, say) is refused instead of
/// resumed into NaNs. The seal is itself a LibTorch archive.

#include <actorpipe/error.hpp>

#include <string>

namespace actorpipe::train {

/// The file's bytes for an archive's bytes.
std::string seal_checkpoint(const std::string& archive);

/// The archive inside a sealed checkpoint read from `path`; an error naming `path` when
/// it is no checkpoint or its checksum does not match.
Result<std::string> unseal_checkpoint(const std::string& file, const std::string& path);

} // namespace actorpipe::train
