#pragma once

/// What the module `actorpipe` a script sees is made of: the script's context, the
/// wrapper that turns a module function's Error into a Lua error at the script's line,
/// and the arguments the functions share (a job, the plugins, a file in the output
/// folder). The functions themselves are grouped by what they do: script_planning.cpp
/// (load_job, plan, simulate, plugins), script_files.cpp (write_json, write_csv),
/// script_training.cpp (run, launch, profile, devices) and script_plots.cpp (plot_*).

#include "plugin/lua_plugins.hpp"
#include "lua/lua_state.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/script.hpp>

#include <lua.hpp>

#include <map>
#include <string>
#include <vector>

namespace actorpipe::lua {

/// What the module's functions share, kept in the state's registry.
struct ScriptContext {
  ScriptOptions options;
  std::string output_dir;
  Registrations registrations;          ///< the plugins the script registered
  std::map<std::string, int> run_names; ///< runs per job name, for their default folders
  /// Profiles measured for jobs that name a zoo model and no profile, by what they were
  /// measured for (the job's model, data, batch and cluster): a sweep measures once.
  std::map<std::string, ModelProfile> measured;
};

ScriptContext& context(lua_State* L);
void set_context(lua_State* L, ScriptContext* c);

/// A module function: its results pushed and counted, or an Error. Lua errors unwind
/// with longjmp, past C++ destructors, so module functions return their errors as
/// values and `entry` raises them once nothing of C++ is left in scope.
using ModuleFunction = Result<int> (*)(lua_State*);

template <ModuleFunction f> int entry(lua_State* L) {
  bool failed = false;
  {
    const LuaState::Outside outside(L); // C++ work, which asks stop_due() itself
    std::string message;
    try {
      auto result = f(L);
      if (result) return *result;
      message = std::move(result).error().message;
    } catch (const std::exception& e) {
      message = e.what();
    }
    luaL_where(L, 1); // the script's FILE:LINE
    lua_pushstring(L, message.c_str());
    lua_concat(L, 2);
    failed = true;
  }
  return failed ? lua_error(L) : 0;
}

/// Sets each function in the table at `module`, with the module as its upvalue.
void set_functions(lua_State* L, int module, std::initializer_list<luaL_Reg> functions);

Status expect_type(lua_State* L, int index, int type, const char* what);

/// The job in argument 1 (a path or a table) with argument 2's overrides applied
/// (actorpipe.with), read and checked as a job file is. Leaves the job's table at 1
/// and nothing above it.
Result<JobSpec> job_argument(lua_State* L);

/// Measures the profile of a job (at index 1, read into `job`) that names a zoo model
/// and no profile, as `actorpipe plan` does, once per script for what it measures.
/// Loads the training runtime; a job with a profile needs nothing.
Status measure_if_needed(lua_State* L, JobSpec& job);

/// Measures the profile of a job that names a zoo model and no profile, every time
/// (a job read from its file, with no table to key a script's measurements by).
Status measure_now_if_needed(lua_State* L, JobSpec& job);

/// The plugins a job sees: the default folders, its plan.plugin_path, the script's
/// plugin path, and what the script registered. `searched` gets the folders.
Result<PluginRegistry> plugins_for(lua_State* L, const JobSpec* job, std::vector<std::string>* searched = nullptr);

/// The file named by the string at `index` (or `name`): relative, inside the output
/// folder, whose folder is created; no symbolic link inside the output folder is
/// followed (make_folder_inside).
Result<std::string> output_file(lua_State* L, int index);
Result<std::string> output_file(lua_State* L, const std::string& name);

/// A file the script may read, named by argument `index`: inside its output folder
/// (relative to it, or as a path a run returned), anywhere with --allow-io; a folder
/// stands for its file `in_folder` where that is given (a run's folder for its trace).
Result<std::string> readable_file(lua_State* L, int index, const char* function, const char* in_folder = nullptr);

/// The folder `name` inside the output folder, created as output_file() creates a
/// file's folder.
Result<std::string> output_folder(lua_State* L, const std::string& name);

/// The options table at `index` (absent or nil: none): an error names a key that is
/// not in `known`.
Status check_keys(lua_State* L, int index, const char* function, std::initializer_list<const char*> known);

void push_json_text(lua_State* L, const std::string& json);

void add_planning_functions(lua_State* L, int module);
void add_file_functions(lua_State* L, int module);
void add_training_functions(lua_State* L, int module);
void add_plot_functions(lua_State* L, int module);

} // namespace actorpipe::lua
