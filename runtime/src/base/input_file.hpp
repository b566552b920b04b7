#pragma once

/// Reading input files: what the user names must be a regular file, so that a folder,
/// a FIFO (which would block) or a device (which would never end) is a clear error.

#include <actorpipe/error.hpp>

#include <string>

namespace actorpipe {

/// Ok when `path` is a regular file; else bad input saying what it is instead
/// ("PATH: file not found", "PATH: is a folder, not a file", …).
Status check_input_file(const std::string& path);

/// The whole file, or an error naming it (check_input_file's among them).
Result<std::string> read_file(const std::string& path);

} // namespace actorpipe
