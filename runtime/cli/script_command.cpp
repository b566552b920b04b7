/// `actorpipe script FILE.lua [ARGS…]`: runs a Lua experiment script (docs/lua.md).

#include "seconds_option.hpp"
#include "commands.hpp"
#include "interrupt.hpp"

#include <actorpipe/script.hpp>

namespace actorpipe::cli {

namespace {

struct ScriptArguments {
  std::string file;
  ScriptOptions options;
};

} // namespace

void add_script_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto args = std::make_shared<ScriptArguments>();
  auto* command = app.add_subcommand("script", "Run a Lua experiment script (sandboxed unless --allow-io)");
  command->add_option("FILE", args->file, "the script (.lua)")->required();
  command->add_option("ARGS", args->options.args, "passed to the script as ... and actorpipe.args");
  command->add_option("--output", args->options.output_dir,
                      "folder the script's files are written to (default runs/<script name>)");
  command->add_option("--timeout", args->options.timeout_s, "stop the script after this many seconds (up to 30 days)")
      ->check(seconds_from(0.001, 30 * 86400));
  command
      ->add_option("--memory-limit", args->options.memory_limit_mib,
                   "stop the script once its Lua values take more than this many MiB (default 1024)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  command->add_flag("--allow-io", args->options.allow_io,
                    "give the script the whole Lua library: files, processes, C modules");
  command->add_option("--plugin-path", common.plugin_path, "also search this folder or file for plugins (repeatable)");
  // Arguments after FILE are the script's, dashes and all.
  command->prefix_command(false);
  command->callback([&run, &common, args] {
    run = [&common, args]() -> int {
      args->options.plugin_path = common.plugin_path;
      args->options.cancel = &InterruptScope::requested();
      const InterruptScope interrupts; // Ctrl-C ends the script with an error and its traceback
      const Status status = run_script(args->file, args->options);
      return status ? 0 : report(status.error());
    };
  });
}

} // namespace actorpipe::cli
