#pragma once

/// The subcommands of `actorpipe`. Each adds itself to the app and sets `run` to what
/// it does when chosen; `run` returns the exit status (0 ok, 1 failed run, 2 bad input).

#include <actorpipe/error.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace actorpipe {
struct TlsFiles;
}

namespace actorpipe::cli {

using Run = std::function<int()>;

/// Options every subcommand that loads plugins takes.
struct CommonOptions {
  std::vector<std::string> plugin_path;
};

void add_plugins_command(CLI::App& app, CommonOptions& common, Run& run);
void add_plan_command(CLI::App& app, CommonOptions& common, Run& run);
void add_simulate_command(CLI::App& app, CommonOptions& common, Run& run);
void add_run_command(CLI::App& app, CommonOptions& common, Run& run);
void add_profile_command(CLI::App& app, Run& run);
inline constexpr const char* run_summary = "Plan a job and train it with the actor runtime";
inline constexpr const char* profile_summary = "Measure the job's model block by block and write its profile";
void add_worker_command(CLI::App& app, Run& run);
inline constexpr const char* launch_summary =
    "Train a job as `run` does, its stages in worker processes on this machine (--nprocs N)";
/// --tls-certificate, --tls-key and --tls-ca, for launch and worker.
void add_tls_options(CLI::App& command, TlsFiles& tls);
inline constexpr const char* worker_summary = "Run the stages a coordinator (actorpipe launch) gives this process";
void add_export_command(CLI::App& app, Run& run);
inline constexpr const char* export_summary =
    "Write the model a run trained (an imported TorchScript model) as TorchScript and a state_dict";
void add_devices_command(CLI::App& app, Run& run);
void add_script_command(CLI::App& app, CommonOptions& common, Run& run);

/// Prints "actorpipe: MESSAGE" to stderr and returns the error's exit status.
int report(const Error& error);

} // namespace actorpipe::cli
