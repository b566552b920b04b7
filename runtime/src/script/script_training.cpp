/// The module's training functions: run, launch, profile, export_model and devices. A run takes the
/// course `actorpipe run` and `launch` take (train_job()); it and profile reach the training runtime
/// through its entry points (train/training_entry.hpp), loaded on a script's first run
/// or profile, so a script that only plans starts without LibTorch.

#include "script/script_module.hpp"

#include <actorpipe/gpu.hpp>
#include <actorpipe/launch.hpp>
#include <actorpipe/profile_io.hpp>
#include <actorpipe/run_report.hpp>
#include <actorpipe/train_job.hpp>

#include "lua/lua_state.hpp"
#include "lua/lua_values.hpp"
#include "plugin/plugin_values.hpp"
#include "profile/measurement_text.hpp"
#include "train/training_entry.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

namespace actorpipe::lua {

namespace {

namespace fs = std::filesystem;

/// A value of the registry, held by reference while C++ works and let go after.
struct Ref {
  lua_State* L;
  int ref = LUA_NOREF;
  Ref(lua_State* L, int index) : L(L) {
    lua_pushvalue(L, index);
    ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  ~Ref() { luaL_unref(L, LUA_REGISTRYINDEX, ref); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  void push() const { lua_rawgeti(L, LUA_REGISTRYINDEX, ref); }
};

/// Option `key` of the table at `index`: nil when absent, else of `type`.
Result<bool> option(lua_State* L, int index, const char* function, const char* key, int type) {
  if (lua_isnoneornil(L, index)) {
    lua_pushnil(L);
    return false;
  }
  if (lua_getfield(L, index, key) == LUA_TNIL) return false;
  if (lua_type(L, -1) == type) return true;
  const std::string found = luaL_typename(L, -1);
  lua_pop(L, 1);
  return Error::bad_input(std::string(function) + ": option '" + key + "' must be a " + lua_typename(L, type) +
                          ", not a " + found);
}

/// A whole-number option, popped; `fallback` when absent.
Result<std::uint64_t> count_option(lua_State* L, int index, const char* function, const char* key,
                                   std::uint64_t fallback, std::uint64_t least, std::uint64_t most) {
  auto given = option(L, index, function, key, LUA_TNUMBER);
  ACTORPIPE_TRY(given);
  if (!*given) {
    lua_pop(L, 1);
    return fallback;
  }
  int is_integer = 0;
  const lua_Integer value = lua_tointegerx(L, -1, &is_integer);
  lua_pop(L, 1);
  // Checked before it is narrowed to the width its option has: 2^32 repeats are not 0.
  if (!is_integer || value < 0 || static_cast<std::uint64_t>(value) < least || static_cast<std::uint64_t>(value) > most)
    return Error::bad_input(std::string(function) + ": option '" + key + "' must be a whole number from " +
                            std::to_string(least) + " to " + std::to_string(most));
  return static_cast<std::uint64_t>(value);
}

/// A string option, popped; empty when absent.
Result<std::string> string_option(lua_State* L, int index, const char* function, const char* key) {
  auto given = option(L, index, function, key, LUA_TSTRING);
  ACTORPIPE_TRY(given);
  std::string value = *given ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  return value;
}

/// A number of seconds from `least` to `most`, popped; none when absent.
Result<std::optional<double>> seconds_option(lua_State* L, int index, const char* function, const char* key,
                                             double least, double most) {
  auto given = option(L, index, function, key, LUA_TNUMBER);
  ACTORPIPE_TRY(given);
  const double seconds = *given ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  if (!*given) return std::optional<double>();
  if (!(seconds >= least && seconds <= most))
    return Error::bad_input(std::string(function) + ": option '" + key + "' must be seconds from " +
                            (std::ostringstream() << least).str() + " to " + (std::ostringstream() << most).str());
  return std::optional<double>(seconds);
}

void push_step(lua_State* L, const StepMetrics& m) {
  lua_createtable(L, 0, 8);
  const std::pair<const char*, double> fields[] = {{"step", static_cast<double>(m.step)},
                                                   {"epoch", static_cast<double>(m.epoch)},
                                                   {"steps_per_epoch", static_cast<double>(m.steps_per_epoch)},
                                                   {"total_steps", static_cast<double>(m.total_steps)}};
  for (const auto& [key, value] : fields) {
    lua_pushinteger(L, static_cast<lua_Integer>(value));
    lua_setfield(L, -2, key);
  }
  for (const auto& [key, value] : {std::pair{"loss", m.loss}, std::pair{"step_ms", m.step_ms},
                                   std::pair{"samples_per_s", m.samples_per_s}, std::pair{"eta_s", m.eta_s}}) {
    lua_pushnumber(L, value);
    lua_setfield(L, -2, key);
  }
}

void push_evaluation(lua_State* L, const EvaluationMetrics& e) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, static_cast<lua_Integer>(e.step));
  lua_setfield(L, -2, "step");
  lua_pushinteger(L, static_cast<lua_Integer>(e.epoch));
  lua_setfield(L, -2, "epoch");
  lua_pushnumber(L, e.test_accuracy);
  lua_setfield(L, -2, "test_accuracy");
  lua_pushnumber(L, e.test_loss);
  lua_setfield(L, -2, "test_loss");
}

/// Calls the script's callbacks from the run: under the plugin host's lock (a Lua sync
/// policy may be asked from a stage thread meanwhile), the first error kept and the
/// run asked to stop.
struct Callbacks {
  lua_State* L;
  std::optional<Ref> on_step, on_evaluation;
  bool stop = false;
  std::optional<Error> error;

  template <class Push> void call(const Ref& f, const char* name, Push push) {
    if (error) return;
    std::lock_guard lock(context(L).registrations.host->mutex());
    f.push();
    push();
    if (auto s = owner(L).call(1, 1, L); !s) {
      error = Error::bad_input(std::string(name) + ": " + s.error().message);
      stop = true;
      return;
    }
    // false, and only false, stops the run: a function that returns nothing goes on.
    if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) stop = true;
    lua_pop(L, 1);
  }
};

/// The options run and launch share, read from the table at `opts` into `course`'s run
/// options and `callbacks`. The run's folder: inside the script's output folder, the
/// `output` option, else `resume`, else the job's name, then NAME-2, NAME-3, …
Status read_run_options(lua_State* L, int opts, const char* name, const JobSpec& job, TrainJobOptions& course,
                        Callbacks& callbacks) {
  RunOptions& options = course.run;
  auto steps = count_option(L, opts, name, "steps", 0, 0, max_steps);
  ACTORPIPE_TRY(steps);
  options.steps = *steps;
  auto epochs = count_option(L, opts, name, "epochs", 0, 0, max_epochs);
  ACTORPIPE_TRY(epochs);
  options.epochs = static_cast<std::uint32_t>(*epochs);
  auto pin = option(L, opts, name, "pin", LUA_TBOOLEAN);
  ACTORPIPE_TRY(pin);
  options.pin_threads = !*pin || lua_toboolean(L, -1);
  lua_pop(L, 1);
  auto stall = seconds_option(L, opts, name, "stall_timeout", 0, 86400);
  ACTORPIPE_TRY(stall);
  if (*stall) options.stall_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(**stall * 1000.0));
  auto output = string_option(L, opts, name, "output");
  ACTORPIPE_TRY(output);
  auto resume = string_option(L, opts, name, "resume");
  ACTORPIPE_TRY(resume);
  for (auto [key, slot] :
       {std::pair{"on_step", &callbacks.on_step}, std::pair{"on_evaluation", &callbacks.on_evaluation}}) {
    auto given = option(L, opts, name, key, LUA_TFUNCTION);
    ACTORPIPE_TRY(given);
    if (*given) slot->emplace(L, -1);
    lua_pop(L, 1);
  }
  ScriptContext& c = context(L);
  std::string folder = !output->empty() ? *output : *resume;
  if (folder.empty()) {
    const int n = ++c.run_names[job.job.name];
    folder = n == 1 ? job.job.name : job.job.name + "-" + std::to_string(n);
  }
  auto dir = output_folder(L, folder);
  ACTORPIPE_TRY(dir);
  options.output_dir = *dir;
  if (!resume->empty()) {
    auto from = output_folder(L, *resume);
    ACTORPIPE_TRY(from);
    options.resume = *from;
  }
  return Ok{};
}

/// Trains `job` as `course` says, with the script's callbacks and stop: what `actorpipe
/// run --json` prints, pushed as a table.
Result<int> train(lua_State* L, const JobSpec& job, TrainJobOptions& course, Callbacks& callbacks) {
  auto plugins = plugins_for(L, &job);
  ACTORPIPE_TRY(plugins);
  const LuaState& state = owner(L);
  course.run.plugins = &*plugins; // the script's own sync policies among them
  course.run.stop_requested = [&] { return callbacks.stop || state.stop_due(); };
  if (callbacks.on_step)
    course.run.on_step = [&](const StepMetrics& m) {
      callbacks.call(*callbacks.on_step, "on_step", [&] { push_step(L, m); });
    };
  if (callbacks.on_evaluation)
    course.run.on_evaluation = [&](const EvaluationMetrics& e) {
      callbacks.call(*callbacks.on_evaluation, "on_evaluation", [&] { push_evaluation(L, e); });
    };
  course.on_tuned = [&](const TuneReport& tuned) {
    std::cerr << "actorpipe: tuned '" << job.job.name << "':\n" << tune_report_to_text(tuned);
  };
  auto trained = train_job(job, *plugins, course);
  ACTORPIPE_TRY(trained);
  const RunSummary& summary = trained->summary;
  if (callbacks.error)
    return Error::bad_input(callbacks.error->message + "\n(the run stopped after step " +
                            std::to_string(summary.steps) + ", its checkpoint in " + summary.output_dir + ")");
  if (state.stop_due())
    return Error::bad_input("the script was stopped during a run (stopped after step " + std::to_string(summary.steps) +
                            ", its checkpoint in " + summary.output_dir + ")");
  auto result = nlohmann::json::parse(run_summary_to_json(summary, trained->predicted_step_ms, trained->plan));
  if (trained->tuned) result["tune"] = nlohmann::json::parse(tune_report_to_json(*trained->tuned));
  push_json_text(L, result.dump());
  return 1;
}

/// run(job [, options]): trains the job; what `actorpipe run --json` prints.
/// Options: steps, epochs, output (a folder in the script's; default the job's name),
/// resume (such a folder), pin, stall_timeout (seconds), on_step(m), on_evaluation(e).
Result<int> run_fn(lua_State* L) {
  constexpr const char* name = "run";
  lua_settop(L, 2);
  ACTORPIPE_TRY(check_keys(
      L, 2, name, {"steps", "epochs", "output", "resume", "pin", "stall_timeout", "on_step", "on_evaluation"}));
  const Ref options_ref(L, 2);
  lua_pushnil(L);
  lua_replace(L, 2); // not overrides of the job
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  options_ref.push();
  TrainJobOptions course;
  Callbacks callbacks{L, {}, {}, false, {}};
  ACTORPIPE_TRY(read_run_options(L, lua_gettop(L), name, *job, course, callbacks));
  ACTORPIPE_TRY(measure_if_needed(L, *job));
  return train(L, *job, course, callbacks);
}

/// launch(job_file [, options]): trains the job as run does, its stages in worker
/// processes on this machine (`actorpipe launch`). The workers load the job from its
/// file, so it is a file's name, not a table. Options: run's, and nprocs (the workers,
/// 1 by default), set (a list of "KEY=VALUE" overrides, as `--set` takes them),
/// restart, heartbeat_timeout (seconds), bind ("cores" or "none").
Result<int> launch_fn(lua_State* L) {
  constexpr const char* name = "launch";
  lua_settop(L, 2);
  ACTORPIPE_TRY(check_keys(L, 2, name,
                           {"steps", "epochs", "output", "resume", "pin", "stall_timeout", "on_step", "on_evaluation",
                            "nprocs", "set", "restart", "heartbeat_timeout", "bind"}));
  if (!context(L).options.allow_io)
    return Error::bad_input("launch: a sandboxed script starts no processes; run it with --allow-io to launch");
  if (lua_type(L, 1) != LUA_TSTRING)
    return Error::bad_input(std::string("launch: expected the job's file name (its workers load it) and found a ") +
                            luaL_typename(L, 1));
  const int opts = 2;
  LaunchOptions launch;
  launch.job_file = lua_tostring(L, 1);
  auto nprocs = count_option(L, opts, name, "nprocs", 1, 1, 1024);
  ACTORPIPE_TRY(nprocs);
  launch.nprocs = *nprocs;
  auto restart = count_option(L, opts, name, "restart", 0, 0, 100);
  ACTORPIPE_TRY(restart);
  launch.restart = static_cast<std::uint32_t>(*restart);
  auto heartbeat = seconds_option(L, opts, name, "heartbeat_timeout", 0.1, 3600);
  ACTORPIPE_TRY(heartbeat);
  if (*heartbeat) launch.heartbeat_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(**heartbeat * 1000.0));
  auto bind = string_option(L, opts, name, "bind");
  ACTORPIPE_TRY(bind);
  if (*bind == "none")
    launch.bind = LaunchOptions::Bind::none;
  else if (!bind->empty() && *bind != "cores")
    return Error::bad_input("launch: option 'bind' must be \"cores\" or \"none\", not '" + *bind + "'");
  auto set = option(L, opts, name, "set", LUA_TTABLE);
  ACTORPIPE_TRY(set);
  if (*set) {
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
    for (lua_Integer i = 1; i <= n; ++i) {
      if (lua_rawgeti(L, -1, i) != LUA_TSTRING) {
        lua_pop(L, 2);
        return Error::bad_input("launch: option 'set' must be a list of \"KEY=VALUE\" strings");
      }
      launch.overrides.emplace_back(lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  // As each worker reads it: the file and the overrides.
  auto job = load_job(launch.job_file, launch.overrides);
  ACTORPIPE_TRY(job);
  TrainJobOptions course;
  Callbacks callbacks{L, {}, {}, false, {}};
  ACTORPIPE_TRY(read_run_options(L, opts, name, *job, course, callbacks));
  ACTORPIPE_TRY(measure_now_if_needed(L, *job));
  course.launch = std::move(launch);
  return train(L, *job, course, callbacks);
}

/// profile(job [, options]): the job's model measured on this machine, as a profile
/// table (the fields of docs/profiles.md). Options: batch_size, warmup, repeats,
/// threads, load, output (a file in the script's output folder to save it to, TOML).
Result<int> profile_fn(lua_State* L) {
  constexpr const char* name = "profile";
  lua_settop(L, 2);
  ACTORPIPE_TRY(check_keys(L, 2, name, {"batch_size", "warmup", "repeats", "threads", "load", "output"}));
  const Ref options_ref(L, 2);
  lua_pushnil(L);
  lua_replace(L, 2);
  auto job = job_argument(L);
  ACTORPIPE_TRY(job);
  options_ref.push();
  const int opts = lua_gettop(L);
  MeasureOptions options;
  auto batch_size = count_option(L, opts, name, "batch_size", options.batch_size, 0, max_measured_batch);
  ACTORPIPE_TRY(batch_size);
  options.batch_size = static_cast<std::uint32_t>(*batch_size);
  auto warmup = count_option(L, opts, name, "warmup", options.warmup, 0, max_measure_passes);
  ACTORPIPE_TRY(warmup);
  options.warmup = static_cast<std::uint32_t>(*warmup);
  auto repeats = count_option(L, opts, name, "repeats", options.repeats, 1, max_measure_passes);
  ACTORPIPE_TRY(repeats);
  options.repeats = static_cast<std::uint32_t>(*repeats);
  auto threads = count_option(L, opts, name, "threads", 0, 0, max_measure_threads);
  ACTORPIPE_TRY(threads);
  options.threads = static_cast<int>(*threads);
  auto load = option(L, opts, name, "load", LUA_TNUMBER);
  ACTORPIPE_TRY(load);
  if (*load) options.load = static_cast<int>(lua_tointeger(L, -1));
  lua_pop(L, 1);
  auto output = string_option(L, opts, name, "output");
  ACTORPIPE_TRY(output);

  auto training = train::training_entry_points();
  ACTORPIPE_TRY(training);
  auto plugins = plugins_for(L, &*job); // a data set the script registered among them
  ACTORPIPE_TRY(plugins);
  options.plugins = &*plugins;
  auto profile = (*training)->measure_profile(*job, options);
  ACTORPIPE_TRY(profile);
  std::fprintf(stderr, "actorpipe: %s\n",
               describe_measurement(*profile, options.repeats, "repeats (profile's option)").c_str());
  if (!output->empty()) {
    auto file = output_file(L, *output);
    ACTORPIPE_TRY(file);
    ACTORPIPE_TRY(save_profile(*profile, *file));
  }
  push_profile(L, *profile);
  return 1;
}

/// devices([{nccl = true}]): what `actorpipe devices --json` prints.
Result<int> devices_fn(lua_State* L) {
  ACTORPIPE_TRY(check_keys(L, 1, "devices", {"nccl"}));
  auto nccl = option(L, 1, "devices", "nccl", LUA_TBOOLEAN);
  ACTORPIPE_TRY(nccl);
  const bool check = *nccl && lua_toboolean(L, -1);
  lua_pop(L, 1);
  push_json_text(L, devices_to_json(survey_devices(check)));
  return 1;
}

} // namespace

Status measure_if_needed(lua_State* L, JobSpec& job) {
  if (!job.profile.blocks.empty()) return Ok{};
  // What a measurement depends on: the model, its data, the batch, and the cluster (it
  // gives each device its share of the cores).
  nlohmann::json parts;
  for (const char* part : {"model", "data", "cluster"}) {
    lua_getfield(L, 1, part);
    auto value = to_json(L, -1, part);
    lua_pop(L, 1);
    ACTORPIPE_TRY(value);
    parts[part] = std::move(*value);
  }
  parts["batch_size"] = job.train.batch_size;
  std::string key = parts.dump();
  ScriptContext& c = context(L);
  if (const auto it = c.measured.find(key); it != c.measured.end()) {
    job.profile = it->second;
    return Ok{};
  }
  ACTORPIPE_TRY(measure_now_if_needed(L, job));
  c.measured.emplace(std::move(key), job.profile);
  return Ok{};
}

/// export_model(run, output): the model the run in folder `run` trained (an imported
/// TorchScript model), written as TorchScript to `output` and as a state_dict beside it,
/// both in the script's output folder: {module_file, state_dict_file, step,
/// parameters, buffers}.
Result<int> export_fn(lua_State* L) {
  constexpr const char* name = "export_model";
  if (lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TSTRING)
    return Error::bad_input(std::string(name) + ": expected the run's folder and the file to write, both names");
  auto run = output_folder(L, lua_tostring(L, 1));
  ACTORPIPE_TRY(run);
  auto out = output_file(L, 2);
  ACTORPIPE_TRY(out);
  auto training = train::training_entry_points();
  ACTORPIPE_TRY(training);
  auto exported = (*training)->export_model(*run, *out);
  ACTORPIPE_TRY(exported);
  lua_createtable(L, 0, 5);
  lua_pushstring(L, exported->module_file.c_str());
  lua_setfield(L, -2, "module_file");
  lua_pushstring(L, exported->state_dict_file.c_str());
  lua_setfield(L, -2, "state_dict_file");
  lua_pushinteger(L, static_cast<lua_Integer>(exported->step));
  lua_setfield(L, -2, "step");
  lua_pushinteger(L, static_cast<lua_Integer>(exported->parameters));
  lua_setfield(L, -2, "parameters");
  lua_pushinteger(L, static_cast<lua_Integer>(exported->buffers));
  lua_setfield(L, -2, "buffers");
  return 1;
}

Status measure_now_if_needed(lua_State* L, JobSpec& job) {
  if (!job.profile.blocks.empty()) return Ok{};
  auto training = train::training_entry_points();
  ACTORPIPE_TRY(training);
  auto plugins = plugins_for(L, &job); // a data set the script registered among them
  ACTORPIPE_TRY(plugins);
  MeasureOptions options;
  options.plugins = &*plugins;
  std::fprintf(stderr, "actorpipe: measuring the profile of model '%s' (no model.profile given)\n",
               std::string(option_name(job.model.zoo)).c_str());
  auto profile = (*training)->measure_profile(job, options);
  ACTORPIPE_TRY(profile);
  std::fprintf(stderr, "actorpipe: %s\n", describe_measurement(*profile, options.repeats).c_str());
  job.profile = std::move(*profile);
  return Ok{};
}

void add_training_functions(lua_State* L, int module) {
  set_functions(L, module,
                {{"run", entry<run_fn>},
                 {"launch", entry<launch_fn>},
                 {"profile", entry<profile_fn>},
                 {"export_model", entry<export_fn>},
                 {"devices", entry<devices_fn>}});
}

} // namespace actorpipe::lua
