/// The module's planning functions: load_job, plan, simulate and plugins, each returning
/// the document the CLI's --json prints, as a table.

#include "script/script_module.hpp"

#include "base/atomic_file.hpp"

#include <actorpipe/planner.hpp>
#include <actorpipe/plan_report.hpp>
#include <actorpipe/simulation_report.hpp>
#include <actorpipe/simulator.hpp>

#include <lua.hpp>

#include <filesystem>

namespace actorpipe::lua {

namespace {

/// load_job(path_or_table [, overrides]): the job's table, checked.
Result<int> load_job_fn(lua_State* L) {
  ACTORPIPE_TRY(job_argument(L)); // checked now, not at its first use
  return 1;
}

/// plan(job [, overrides]): what `actorpipe plan --json` prints.
Result<int> plan_fn(lua_State* L) {
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  ACTORPIPE_TRY(measure_if_needed(L, *job));
  auto plugins = plugins_for(L, &*job);
  ACTORPIPE_TRY(plugins);
  auto plan = make_plan(*job, *plugins);
  ACTORPIPE_TRY(plan);
  push_json_text(L, plan_to_json(*plan, job->profile, job->cluster));
  return 1;
}

/// simulate(job [, overrides]): what `actorpipe simulate --json` prints, and with
/// simulate.trace the trace's path.
Result<int> simulate_fn(lua_State* L) {
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  ACTORPIPE_TRY(measure_if_needed(L, *job));
  auto options = simulation_options(*job);
  if (!options) return std::move(options).error().with_context(job->where("simulate.stragglers"));
  auto plugins = plugins_for(L, &*job);
  ACTORPIPE_TRY(plugins);
  auto plan = make_plan(*job, *plugins);
  ACTORPIPE_TRY(plan);
  // With simulate.trace, the trace is written into the script's output folder under
  // that file name, and its path is the result's `trace`.
  if (!job->simulate.trace.empty()) options->trace = true;
  auto report = simulate(*plan, job->profile, job->cluster, *options);
  ACTORPIPE_TRY(report);
  std::string trace_path;
  if (!job->simulate.trace.empty()) {
    auto file = output_file(L, std::filesystem::path(job->simulate.trace).filename().string());
    ACTORPIPE_TRY(file);
    ACTORPIPE_TRY(write_file_atomically(*file, trace_json(*report, *plan, job->cluster)));
    trace_path = *file;
  }
  push_json_text(L, simulation_to_json(*report, *plan, job->cluster));
  if (!trace_path.empty()) {
    lua_pushstring(L, trace_path.c_str());
    lua_setfield(L, -2, "trace");
  }
  return 1;
}

/// plugins(): what `actorpipe plugins --json` prints, with the script's own.
Result<int> plugins_fn(lua_State* L) {
  std::vector<std::string> folders;
  auto plugins = plugins_for(L, nullptr, &folders);
  ACTORPIPE_TRY(plugins);
  push_json_text(L, plugins_to_json(*plugins, folders));
  return 1;
}

} // namespace

void add_planning_functions(lua_State* L, int module) {
  set_functions(L, module,
                {{"load_job", entry<load_job_fn>},
                 {"plan", entry<plan_fn>},
                 {"simulate", entry<simulate_fn>},
                 {"plugins", entry<plugins_fn>}});
}

} // namespace actorpipe::lua
