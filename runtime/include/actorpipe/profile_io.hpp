#pragma once

/// Reading and writing model profiles.
///
/// Two formats: actorpipe's own TOML (read and write, with sub-blocks; docs/profiles.md)
/// and PipeDream's graph.txt (read), whose DAG is put in topological order and collapsed
/// to a chain that keeps, for every cut, the bytes of every tensor crossing it.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/model_profile.hpp>

#include <cstdint>
#include <string>

namespace actorpipe {

enum class ProfileFormat { automatic, toml, pipedream };

struct ProfileImportOptions {
  ProfileFormat format = ProfileFormat::automatic;
  /// Samples per batch of a PipeDream profile; the format does not record it, so 0
  /// (unknown) makes loading one an error.
  std::uint32_t batch_size = 0;
};

/// Loads and validates a profile; errors name the file and line.
ACTORPIPE_EXPORT Result<ModelProfile> load_profile(const std::string& path, const ProfileImportOptions& options = {});

/// Parses PipeDream graph.txt text; `source` names it in errors.
ACTORPIPE_EXPORT Result<ModelProfile> parse_pipedream_profile(const std::string& text, const std::string& source,
                                                              std::uint32_t batch_size);

/// Parses actorpipe's TOML profile text; `source` names it in errors.
ACTORPIPE_EXPORT Result<ModelProfile> parse_toml_profile(const std::string& text, const std::string& source);

/// The profile in actorpipe's TOML format.
ACTORPIPE_EXPORT std::string to_toml(const ModelProfile& profile);

/// Writes the profile atomically (temporary file, then rename).
ACTORPIPE_EXPORT Status save_profile(const ModelProfile& profile, const std::string& path);

} // namespace actorpipe
