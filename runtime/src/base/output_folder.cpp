#include "base/output_folder.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace actorpipe {

namespace fs = std::filesystem;

namespace {

/// Errors of the user's path (missing, a file in the way, no permission, read-only)
/// are bad input; the rest (no space, I/O) a failed run.
Error folder_error(const fs::path& folder, int error) {
  const std::string message = folder.string() + ": cannot create the folder: " + std::strerror(error);
  const bool users = error == ENOENT || error == ENOTDIR || error == EACCES || error == EPERM || error == EROFS ||
                     error == EEXIST || error == ENAMETOOLONG || error == ELOOP;
  return users ? Error::bad_input(message) : Error::run_failed(message);
}

/// `folder` as a folder, made if missing; a link there is refused when `no_links`.
Status ensure_folder(const fs::path& folder, bool no_links) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) {
    if (errno != ENOENT) return folder_error(folder, errno);
    if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) return folder_error(folder, errno);
    if (::lstat(folder.c_str(), &st) != 0) return folder_error(folder, errno);
  }
  if (S_ISLNK(st.st_mode) && no_links)
    return Error::bad_input(folder.string() +
                            ": is a symbolic link inside an output folder; actorpipe does not follow one there");
  if (S_ISLNK(st.st_mode) && ::stat(folder.c_str(), &st) != 0) return folder_error(folder, errno);
  if (!S_ISDIR(st.st_mode)) return Error::bad_input(folder.string() + ": is not a folder");
  return Ok{};
}

} // namespace

Result<std::string> make_folder_inside(const std::string& root, const fs::path& relative) {
  if (relative.is_absolute())
    return Error::bad_input("'" + relative.string() + "': must be relative to the output folder " + root);
  // The root is the user's path: made as create_directories would, links followed.
  fs::path folder;
  for (const auto& part : fs::path(root)) {
    folder /= part;
    if (part.empty() || part == "/" || part == "." || part == "..") continue;
    ACTORPIPE_TRY(ensure_folder(folder, false));
  }
  if (folder.empty()) folder = ".";
  for (const auto& part : relative) {
    if (part.empty() || part == ".") continue;
    if (part == "..")
      return Error::bad_input("'" + relative.string() + "': must stay inside the output folder " + root);
    folder /= part;
    ACTORPIPE_TRY(ensure_folder(folder, true));
  }
  return folder.string();
}

bool resolves_inside(const fs::path& root, const fs::path& path) {
  std::error_code ec;
  const fs::path resolved_root = fs::weakly_canonical(root, ec);
  if (ec) return false;
  const fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec) return false;
  const fs::path rel = resolved.lexically_relative(resolved_root);
  return !rel.empty() && *rel.begin() != "..";
}

} // namespace actorpipe
