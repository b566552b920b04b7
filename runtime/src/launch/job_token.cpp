#include "launch/job_token.hpp"

#include "base/sha256.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <sys/stat.h>

namespace actorpipe::launch {

std::string new_token() {
  std::random_device source;
  static constexpr char digits[] = "0123456789abcdef";
  std::string token;
  for (int word = 0; word < 8; ++word) {
    std::uint32_t bits = source();
    for (int nibble = 0; nibble < 8; ++nibble, bits >>= 4)
      token += digits[bits & 0xF];
  }
  return token;
}

std::string store_prefix(const std::string& token) {
  // 128 bits of the digest: as hard to guess as the shortest token taken.
  return "job-" + sha256_hex("actorpipe tensor store\n" + token).substr(0, 32);
}

namespace {

/// `token` where it is long enough to stand for a secret; else bad input naming `where`
/// it came from.
Result<std::string> long_enough(std::string token, const std::string& where) {
  if (token.size() < min_token_length)
    return Error::bad_input(where + ": a token of " + std::to_string(token.size()) +
                            " characters is too easy to guess; " + "give at least " + std::to_string(min_token_length) +
                            " (a made token is 64 hex digits: 256 random bits)");
  return token;
}

} // namespace

Result<std::string> read_token_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return Error::bad_input(path + ": cannot read the token file: " + std::strerror(errno));
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    return Error::bad_input(path + ": the token file may be read or written by others than its owner (chmod 600 " +
                            path + ")");
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) return Error::bad_input(path + ": the token file is empty or cannot be read");
  while (!token.empty() && (token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  if (token.empty()) return Error::bad_input(path + ": the token file's first line is empty");
  return long_enough(std::move(token), path);
}

Result<std::string> worker_token(const std::optional<std::string>& file, const char* variable) {
  if (file) return read_token_file(*file);
  if (variable != nullptr && *variable != '\0') return long_enough(variable, token_variable);
  return Error::bad_input(std::string("no token: name the job's token file (--token-file) or set ") + token_variable);
}

bool same_token(std::string_view given, std::string_view expected) {
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    differ |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  return differ == 0;
}

} // namespace actorpipe::launch
