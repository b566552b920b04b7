#pragma once

/// Writing files so that a reader never sees half of one.

#include <actorpipe/error.hpp>

#include <string>
#include <string_view>

namespace actorpipe {

/// Writes `content` to a temporary file beside `path`, flushes it, and renames it over
/// `path`. On failure nothing is left behind and the old file, if any, is untouched.
/// Temporaries of `path` that a killed process left behind go once it is written.
/// `mode` is the file's permissions whatever the umask (0600 for a secret: no moment
/// when others may read it). What is at `path` must be a regular file, a link to one
/// (the link is replaced) or nothing: a device, pipe, socket or folder is bad input,
/// as is a folder that is missing, not one, or not writable.
Status write_file_atomically(const std::string& path, std::string_view content, unsigned mode = 0644);

} // namespace actorpipe
