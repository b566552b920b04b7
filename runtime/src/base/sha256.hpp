#pragma once

/// SHA-256 through OpenSSL, as hex digits.

#include <string>
#include <string_view>

namespace actorpipe {

/// The SHA-256 digest of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

} // namespace actorpipe
