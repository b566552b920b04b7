#pragma once

/// Paths and helpers shared by the test suites: where the source and build trees are,
/// scratch folders, and running the `actorpipe` binary.

#include <actorpipe/plugin_registry.hpp>

#include <filesystem>
#include <string>

namespace actorpipe::test {

/// The plugins of the default search path (the build tree's), discovered once.
const PluginRegistry& plugins();

std::filesystem::path source_root();
std::filesystem::path build_root();
/// Where the deliberately broken plugin modules are built.
std::filesystem::path broken_plugins();

/// A fresh empty folder, removed when the object goes.
class ScratchDir {
public:
  ScratchDir();
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  /// Writes `content` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& content) const;

private:
  std::filesystem::path path_;
};

struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `actorpipe ARGS` (ARGS is passed to the shell as written) and captures both streams.
CommandResult run_cli(const std::string& args);

} // namespace actorpipe::test
