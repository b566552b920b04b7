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

/// This program's folder; empty when unknown.
fs::path program_folder() {
  std::error_code ec;
  const fs::path self = fs::canonical("/proc/self/exe", ec);
  return ec ? fs::path{} : self.parent_path();
}

/// Whether `here` is the CLI's folder of a build tree: actorpipe-train is built beside it.
bool in_build_tree(const fs::path& here) { return fs::exists(here / "actorpipe-train"); }

/// The installation's prefix, from the folder of an installed program.
fs::path install_prefix(const fs::path& here) {
  fs::path prefix = here;
  for (const auto& part : fs::path(install_dirs::bindir))
    if (!part.empty()) prefix = prefix.parent_path();
  return prefix;
}

/// Where actorpipe-train is: beside this program (a build tree), else under the
/// installation's libexec folder.
fs::path training_program() {
  const fs::path here = program_folder();
  if (here.empty()) return "actorpipe-train";
  if (in_build_tree(here)) return here / "actorpipe-train";
  return install_prefix(here) / install_dirs::libexecdir / "actorpipe" / "actorpipe-train";
}

} // namespace

std::string training_library() {
  const fs::path here = program_folder();
  if (here.empty()) return {};
  // BUILD/runtime/cli/actorpipe and BUILD/actors/libactorpipe_training.so (actors/meson.build).
  if (in_build_tree(here)) return (here.parent_path().parent_path() / "actors" / "libactorpipe_training.so").string();
  return (install_prefix(here) / install_dirs::libdir / "libactorpipe_training.so.0").string();
}

void remember_arguments(int argc, char** argv) { arguments.assign(argv, argv + argc + 1); }

Error hand_over_to_training() {
  const fs::path program = training_program();
  if (arguments.empty()) return Error::run_failed("no command line to hand over to " + program.string());
  ::execv(program.c_str(), arguments.data());
  return Error::run_failed("cannot start " + program.string() + " for this command: " + std::strerror(errno));
}

} // namespace actorpipe::cli
