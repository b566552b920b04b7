#pragma once

/// An advisory lock on a folder (flock on the folder itself), held while a run writes
/// into it, so that a second run into the same folder is refused instead of mixing its
/// files with the first one's. The kernel drops it when the process ends, however it
/// ends: nothing stale is left behind.

#include <actorpipe/error.hpp>

#include <string>

namespace actorpipe {

class FolderLock {
public:
  /// Locks `folder`, which must exist; an error naming it when another process holds it.
  static Result<FolderLock> take(const std::string& folder);

  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

} // namespace actorpipe
