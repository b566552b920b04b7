#include "base/atomic_file.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sstream>
#include <unistd.h>

namespace actorpipe {

namespace {

/// A temporary of PATH is PATH.tmp followed by mkstemp's six letters and digits.
constexpr std::string_view temporary_mark = ".tmp";

Error system_error(const std::string& path, const char* what) {
  return Error::run_failed(path + ": " + what + ": " + std::strerror(errno));
}

/// Removes the PATH.tmpXXXXXX files beside `path`: written by a process that died
/// before it could rename them.
void remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string prefix = target.filename().string() + std::string(temporary_mark);
  std::error_code ec;
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0 &&
                      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                                  [](unsigned char c) { return std::isalnum(c) != 0; });
    if (ours && entry.is_regular_file(ec)) std::filesystem::remove(entry.path(), ec);
  }
}

} // namespace

Status write_file_atomically(const std::string& path, std::string_view content, unsigned mode) {
  std::string temp = path + std::string(temporary_mark) + "XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return system_error(path, "cannot create a temporary file");
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error error = system_error(path, "cannot write");
      ::close(fd);
      ::unlink(temp.c_str());
      return error;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; give the file the permissions asked for.
  ::fchmod(fd, static_cast<mode_t>(mode));
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error error = system_error(path, "cannot flush");
    ::unlink(temp.c_str());
    return error;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    Error error = system_error(path, "cannot rename the temporary file into place");
    ::unlink(temp.c_str());
    return error;
  }
  remove_stale_temporaries(path);
  return Ok{};
}

} // namespace actorpipe
