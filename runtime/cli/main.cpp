/// `actorpipe`: a thin command line over the library API (actorpipe/*.hpp). Built twice:
/// as `actorpipe` (ACTORPIPE_CLI_CORE, without the training runtime) and as
/// `actorpipe-train`, to which `actorpipe` hands the commands that train.

#include "commands.hpp"
#include "training_handoff.hpp"
#include "lua/lua_watchdog.hpp"
#include "train/training_entry.hpp"

#include <actorpipe/version.hpp>

#include <iostream>
#include <string>

namespace actorpipe::cli {

int report(const Error& error) {
  std::cerr << ("actorpipe: " + error.message + "\n"); // one write: a launch's workers share stderr
  return exit_status(error.code);
}

} // namespace actorpipe::cli

int main(int argc, char** argv) {
  using namespace actorpipe;
  CLI::App app{"actorpipe: plan and run pipeline + data parallel DNN training on heterogeneous GPU servers"};
  app.name("actorpipe");
  app.set_version_flag("--version", std::string("actorpipe ") + version_string + " (plugin ABI " +
                                        std::to_string(plugin_abi_version) + "; LibTorch " + libtorch_string + ")");
  app.require_subcommand(1);
  app.fallthrough();

  cli::remember_arguments(argc, argv);
  // A command ends when its Lua outruns its limit where no hook can stop it (a
  // finaliser, one long library call): lua_watchdog.hpp.
  lua::end_process_on_overrun(true);
#ifdef ACTORPIPE_CLI_CORE
  // A script's first actorpipe.run or profile loads the training runtime from there.
  train::set_training_library(cli::training_library());
#else
  train::set_training_entry_points(actorpipe_training_entry_points());
#endif
  cli::CommonOptions common;
  cli::Run run;
  cli::add_plugins_command(app, common, run);
  cli::add_plan_command(app, common, run);
  cli::add_simulate_command(app, common, run);
#ifdef ACTORPIPE_CLI_CORE
  // Training and measuring are actorpipe-train's (training_handoff.hpp); they are
  // listed here so that --help shows every command.
  for (const auto& [name, summary] :
       {std::pair{"run", cli::run_summary}, std::pair{"launch", cli::launch_summary},
        std::pair{"worker", cli::worker_summary}, std::pair{"profile", cli::profile_summary},
        std::pair{"export", cli::export_summary}}) {
    app.add_subcommand(name, summary)->allow_extras();
    if (argc > 1 && std::string(argv[1]) == name) return cli::report(cli::hand_over_to_training());
  }
#else
  cli::add_run_command(app, common, run);
  cli::add_worker_command(app, run);
  cli::add_profile_command(app, run);
  cli::add_export_command(app, run);
#endif
  cli::add_devices_command(app, run);
  cli::add_script_command(app, common, run);

  // CLI11 takes an unknown first word for a missing subcommand; say what it is.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* command : app.get_subcommands({})) {
      known = known || command->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command->get_name();
    }
    if (!known)
      return cli::report(Error::bad_input("unknown command '" + std::string(argv[1]) + "' (commands: " + names + ")"));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    // Usage errors are bad input; --help and --version are not errors.
    return status == 0 ? 0 : 2;
  }
  return run ? run() : 2;
}
