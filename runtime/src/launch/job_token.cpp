#include "launch/job_token.hpp"

#include "base/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
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

Status write_token_file(const std::string& path, const std::string& token) {
  return write_file_atomically(path, token + "\n", 0600);
}

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
  return token;
}

Result<std::string> worker_token(const std::optional<std::string>& file, const char* variable) {
  if (file) return read_token_file(*file);
  if (variable != nullptr && *variable != '\0') return std::string(variable);
  return Error::bad_input(std::string("no token: name the job's token file (--token-file) or set ") + token_variable);
}

bool same_token(std::string_view given, std::string_view expected) {
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i)
    differ |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  return differ == 0;
}

} // namespace actorpipe::launch
