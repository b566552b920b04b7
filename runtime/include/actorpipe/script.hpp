#pragma once

/// Lua experiment scripts (docs/lua.md): `actorpipe script FILE.lua [ARGS…]`, and the
/// same from C++. A script sees the module `actorpipe` (jobs, plans, simulations,
/// plugins, files in its output folder) and runs sandboxed unless `allow_io`.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace actorpipe {

struct ScriptOptions {
  std::vector<std::string> args; ///< the script's `...` and actorpipe.args
  /// Where actorpipe.write_json and write_csv write; empty: runs/<script's name>.
  std::string output_dir;
  /// The whole Lua standard library: files, processes, C modules.
  bool allow_io = false;
  double timeout_s = 0; ///< stop the script after this long; 0: never
  /// Stop the script once its Lua values take more than this many MiB.
  std::size_t memory_limit_mib = 1024;
  /// Set from elsewhere (a signal handler, another thread) to stop the script.
  const std::atomic<bool>* cancel = nullptr;
  /// Searched for plugins after the default folders and each job's plan.plugin_path.
  std::vector<std::string> plugin_path;
};

/// Runs the script. A Lua error, or an actorpipe error a module function raised, comes
/// back as bad input with "FILE:LINE: message" and the Lua traceback.
ACTORPIPE_EXPORT Status run_script(const std::string& path, const ScriptOptions& options = {});

} // namespace actorpipe
