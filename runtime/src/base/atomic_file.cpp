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

/// A file that cannot be made where the user's path says (its folder missing, a file,
/// read-only or not ours) is bad input; the rest (no space, I/O) a failed run.
Error create_error(const std::string& path) {
  const int error = errno;
  const std::string message = path + ": cannot create the file: " + std::strerror(error);
  const bool users = error == ENOENT || error == ENOTDIR || error == EACCES || error == EPERM || error == EROFS ||
                     error == EISDIR || error == ENAMETOOLONG || error == ELOOP || error == EINVAL;
  return users ? Error::bad_input(message) : Error::run_failed(message);
}

/// What is at `path` may be replaced: nothing, a regular file, or a link to one or to
/// nothing (the link is replaced, not what it names). A device, pipe, socket or folder,
/// or a link to one, is refused: replacing /dev/null or a terminal is never meant.
Status check_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Ok{};
  if (S_ISREG(st.st_mode)) return Ok{};
  if (S_ISLNK(st.st_mode)) {
    struct stat target {};
    if (::stat(path.c_str(), &target) != 0 || S_ISREG(target.st_mode)) return Ok{};
    std::error_code ec;
    const std::string names = std::filesystem::read_symlink(path, ec).string();
    return Error::bad_input(path + ": is a symbolic link to " + names +
                            ", which is not a regular file; actorpipe writes only regular files");
  }
  const char* what = S_ISDIR(st.st_mode)                          ? "a folder"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISFIFO(st.st_mode)                       ? "a pipe"
                                                                  : "a socket";
  return Error::bad_input(path + ": is " + std::string(what) +
                          ", not a regular file; actorpipe writes only regular files");
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
  ACTORPIPE_TRY(check_replaceable(path));
  std::string temp = path + std::string(temporary_mark) + "XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return create_error(path);
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
  // mkstemp creates 0600; give the file the permissions asked for, whatever the umask.
  ::fchmod(fd, static_cast<mode_t>(mode));
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error error = system_error(path, "cannot flush");
    ::unlink(temp.c_str());
    return error;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    Error error = errno == EISDIR || errno == ENOTDIR || errno == EBUSY
                      ? Error::bad_input(path + ": cannot replace it: " + std::strerror(errno))
                      : system_error(path, "cannot rename the temporary file into place");
    ::unlink(temp.c_str());
    return error;
  }
  remove_stale_temporaries(path);
  return Ok{};
}

} // namespace actorpipe
