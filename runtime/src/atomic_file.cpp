#include "atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sstream>
#include <unistd.h>

namespace actorpipe {

namespace {

Error system_error(const std::string& path, const char* what) {
  return Error::run_failed(path + ": " + what + ": " + std::strerror(errno));
}

} // namespace

Status write_file_atomically(const std::string& path, std::string_view content) {
  std::string temp = path + ".tmpXXXXXX";
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
  // mkstemp creates 0600; give the file the usual permissions.
  ::fchmod(fd, 0644);
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
  return Ok{};
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::bad_input(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Error::bad_input(path + ": cannot read");
  return out.str();
}

} // namespace actorpipe
