/// SHA-256 through OpenSSL, as hex digits.

#include "base/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace actorpipe {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 is not available from OpenSSL");
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i)
    hex += {digits[digest[i] >> 4], digits[digest[i] & 0xF]};
  return hex;
}

} // namespace actorpipe
