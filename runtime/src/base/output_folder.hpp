#pragma once

/// Folders inside an output folder, made and read so that a symbolic link planted
/// there cannot lead a write (or a sandboxed read) outside it. The output folder
/// itself is the user's choice and may be reached through links; what lies inside it
/// is the run's or the script's, and no link inside it is followed.

#include <actorpipe/error.hpp>

#include <filesystem>
#include <string>

namespace actorpipe {

/// `root`/`relative`, made folder by folder (root too, as the user's path). Refused,
/// as bad input naming the part: an absolute or empty `relative`, a "..", and a part
/// that exists as a symbolic link or as anything but a folder.
Result<std::string> make_folder_inside(const std::string& root, const std::filesystem::path& relative);

/// True when `path`, every link in it resolved, lies inside `root` (resolved too):
/// the check a read confined to `root` needs, which a lexical one is not.
bool resolves_inside(const std::filesystem::path& root, const std::filesystem::path& path);

} // namespace actorpipe
