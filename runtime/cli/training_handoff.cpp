#include "training_handoff.hpp"

#include "cli_install_dirs.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace actorpipe::cli {

namespace {

std::vector<char*> arguments;

namespace fs = std::filesystem;

/// Where actorpipe-train is: beside this program (a build tree), else under the
/// installation's libexec folder.
fs::path training_program() {
  std::error_code ec;
  const fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) return "actorpipe-train";
  const fs::path here = self.parent_path();
  if (fs::exists(here / "actorpipe-train")) return here / "actorpipe-train";
  fs::path prefix = here;
  for (const auto& part : fs::path(install_dirs::bindir))
    if (!part.empty()) prefix = prefix.parent_path();
  return prefix / install_dirs::libexecdir / "actorpipe" / "actorpipe-train";
}

} // namespace

void remember_arguments(int argc, char** argv) { arguments.assign(argv, argv + argc + 1); }

Error hand_over_to_training() {
  const fs::path program = training_program();
  if (arguments.empty()) return Error::run_failed("no command line to hand over to " + program.string());
  ::execv(program.c_str(), arguments.data());
  return Error::run_failed("cannot start " + program.string() + " for this command: " + std::strerror(errno));
}

} // namespace actorpipe::cli
