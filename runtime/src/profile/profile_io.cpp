#include <actorpipe/profile_io.hpp>

#include "base/atomic_file.hpp"
#include "base/input_file.hpp"

#include <filesystem>

namespace actorpipe {

namespace {

/// A graph.txt profile starts with "nodeN -- "; anything else is taken as TOML.
ProfileFormat sniff(const std::string& path, const std::string& text) {
  if (path.ends_with(".toml")) return ProfileFormat::toml;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text.compare(first, 4, "node") == 0 &&
      text.find(" -- ", first) < text.find('\n', first))
    return ProfileFormat::pipedream;
  return ProfileFormat::toml;
}

} // namespace

Result<ModelProfile> load_profile(const std::string& path, const ProfileImportOptions& options) {
  auto text = read_file(path);
  ACTORPIPE_TRY(text);
  const ProfileFormat format = options.format == ProfileFormat::automatic ? sniff(path, *text) : options.format;
  if (format == ProfileFormat::pipedream) return parse_pipedream_profile(*text, path, options.batch_size);
  return parse_toml_profile(*text, path);
}

Status save_profile(const ModelProfile& profile, const std::string& path) {
  if (auto s = profile.validate(); !s) return s;
  return write_file_atomically(path, to_toml(profile));
}

} // namespace actorpipe
