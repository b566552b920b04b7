// Lua: jobs written in Lua read by the same code as TOML jobs, their mistakes placed at
// the Lua source's lines; scripts sandboxed, stopped by a timeout or a cancel flag, and
// the module's plans, simulations and files.
#define BOOST_TEST_MODULE lua
#include <boost/test/unit_test.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/report.hpp>
#include <actorpipe/script.hpp>

#include "lua/source_keys.hpp"

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace actorpipe;
using actorpipe::test::ScratchDir;
using test::contains;

namespace {

std::string configs() { return (test::source_root() / "configs").string(); }

/// A Lua job over the repository's VGG-16 profile and 4-device cluster, `plan` its
/// [plan] table's body.
std::string vgg_job(const std::string& plan) {
  return "local dir = '" + configs() +
         "/'\n"
         "return {\n"
         "  cluster = dir .. 'clusters/4dev-one-server.toml',\n"
         "  model = { profile = dir .. 'profiles/pipedream/vgg16.txt', profile_batch_size = 128 },\n"
         "  train = { batch_size = 128 },\n"
         "  plan = {\n" +
         plan + "\n  },\n}\n";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `source` as a script in `dir`; the error's message, or "" when it ran.
ScriptOptions with_args(std::vector<std::string> args) {
  ScriptOptions options;
  options.args = std::move(args);
  return options;
}

std::string script_error(const ScratchDir& dir, const std::string& source, ScriptOptions options = {}) {
  const std::string path = dir.write("script.lua", source);
  if (options.output_dir.empty()) options.output_dir = (dir.path() / "out").string();
  const Status status = run_script(path, options);
  return status ? std::string() : status.error().message;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_lua_job_is_the_toml_job_it_spells) {
  auto lua = load_job(configs() + "/vgg16-4dev.lua");
  auto toml = load_job(configs() + "/vgg16-4dev.toml");
  REQUIRE_OK(lua);
  REQUIRE_OK(toml);
  // micro_batches is computed in the Lua file (batch // 16).
  BOOST_TEST(lua->plan.micro_batches == 8u);
  BOOST_TEST(lua->train.momentum == toml->train.momentum);
  BOOST_TEST(lua->model.profile == toml->model.profile); // resolved against the file's folder alike
  BOOST_TEST(lua->cluster.servers.size() == toml->cluster.servers.size());
  auto a = make_plan(*lua, test::plugins());
  auto b = make_plan(*toml, test::plugins());
  REQUIRE_OK(a);
  REQUIRE_OK(b);
  BOOST_TEST(a->iteration_time_ms == b->iteration_time_ms);
  BOOST_TEST(a->stages.size() == b->stages.size());
  // The origin of a key is its Lua line, which a later error (an unknown plugin) names.
  BOOST_TEST(lua->where("plan.partitioner") == configs() + "/vgg16-4dev.lua:17: plan.partitioner: ");
}

BOOST_AUTO_TEST_CASE(a_mistake_in_a_lua_job_names_its_file_line_and_key) {
  ScratchDir dir;
  const std::string typo = dir.write("typo.lua", vgg_job("    stages = 4,\n    micro_batchs = 8,"));
  auto job = load_job(typo);
  BOOST_REQUIRE(!job);
  BOOST_TEST(job.error().message == typo + ":8: plan.micro_batchs: unknown key, did you mean 'micro_batches'?");
  BOOST_TEST(exit_status(job.error().code) == 2);

  const std::string type = dir.write("type.lua", vgg_job("    stages = 'four',"));
  job = load_job(type);
  BOOST_REQUIRE(!job);
  BOOST_TEST(contains(job.error().message, type + ":7: plan.stages: "), job.error().message);

  // A table built in pieces: the key is found where its piece writes it.
  const std::string pieces = dir.write("pieces.lua", "-- plan = { stages = 1 } in a comment is not a key\n"
                                                     "local plan = {\n"
                                                     "  partitioner = 'uniform',\n"
                                                     "  schedular = '1f1b',\n"
                                                     "}\n"
                                                     "return { plan = plan, model = { profile = 'none.toml' } }\n");
  job = load_job(pieces);
  BOOST_REQUIRE(!job);
  BOOST_TEST(contains(job.error().message, pieces + ":4: plan.schedular: unknown key"), job.error().message);

  // What is not a job at all.
  const std::string number = dir.write("number.lua", "return 42\n");
  job = load_job(number);
  BOOST_REQUIRE(!job);
  BOOST_TEST(job.error().message ==
             number + ": a Lua job must return a table of the job's keys, and it returned a number");
  const std::string function = dir.write("function.lua", "return { job = { name = function() end } }\n");
  job = load_job(function);
  BOOST_REQUIRE(!job);
  BOOST_TEST(contains(job.error().message, "job.name: a function cannot be a job's value"), job.error().message);
  const std::string syntax = dir.write("syntax.lua", "return {\n  plan = { stages = 4 \n}\n");
  job = load_job(syntax);
  BOOST_REQUIRE(!job);
  BOOST_TEST(contains(job.error().message, syntax + ":4: '}' expected"), job.error().message);
}

BOOST_AUTO_TEST_CASE(source_keys_follow_nested_constructors_past_comments_and_strings) {
  const auto keys = lua::SourceKeys::scan("local s = \"plan = {\" --[[ train = {\n lr = 1 } ]]\n"
                                          "return {\n"
                                          "  train = { lr = 0.1,\n"
                                          "    momentum = 0.9 },\n"
                                          "  [\"plan\"] = { options = { autopipe = { x = 1 } } },\n"
                                          "}\n");
  BOOST_TEST(keys.line_of({"train", "lr"}) == 4);
  BOOST_TEST(keys.line_of({"train", "momentum"}) == 5);
  BOOST_TEST(keys.line_of({"plan", "options", "autopipe", "x"}) == 6);
  // Not written: the nearest written ancestor, or the return.
  BOOST_TEST(keys.line_of({"train", "epochs"}) == 4);
  BOOST_TEST(keys.line_of({"data", "seed"}) == 3);
}

BOOST_AUTO_TEST_CASE(a_script_plans_simulates_and_writes_its_files) {
  ScratchDir dir;
  const std::string job = dir.write("job.lua", vgg_job("    stages = 4, micro_batches = 8,"));
  const std::string error = script_error(dir, R"(
local job = actorpipe.load_job(...)
local rows = {}
for _, stages in ipairs({2, 4}) do
  local plan = actorpipe.plan(job, {["plan.stages"] = stages})
  local sim = actorpipe.simulate(job, {plan = {stages = stages}, simulate = {iterations = 2}})
  rows[#rows + 1] = {stages = #plan.stages, planned = plan.iteration_time_ms, simulated = sim.iteration_time_ms}
end
actorpipe.write_csv("sweep.csv", rows, {"stages", "planned", "simulated"})
actorpipe.write_json("deep/sweep.json", {rows = rows, plugins = #actorpipe.plugins().plugins})
)",
                                         with_args({job}));
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  // The same plan as the C++ API gives.
  auto spec = load_job(job, {"plan.stages=2"});
  REQUIRE_OK(spec);
  auto plan = make_plan(*spec, test::plugins());
  REQUIRE_OK(plan);
  const auto written = nlohmann::json::parse(read((dir.path() / "out/deep/sweep.json").string()));
  BOOST_TEST(written["rows"][0]["stages"].get<int>() == 2);
  BOOST_TEST(written["rows"][0]["planned"].get<double>() == plan->iteration_time_ms);
  BOOST_TEST(written["rows"][1]["stages"].get<int>() == 4);
  BOOST_TEST(written["rows"][1]["simulated"].get<double>() > 0);
  BOOST_TEST(written["plugins"].get<int>() == static_cast<int>(test::plugins().plugins().size()));
  const std::string csv = read((dir.path() / "out/sweep.csv").string());
  BOOST_TEST(csv.rfind("stages,planned,simulated\n2,", 0) == 0u, csv);
  BOOST_TEST(std::count(csv.begin(), csv.end(), '\n') == 3);
}

BOOST_AUTO_TEST_CASE(an_actorpipe_error_in_a_script_is_the_clis_message_at_the_scripts_line) {
  ScratchDir dir;
  const std::string job = dir.write("job.lua", vgg_job("    stages = 4, partitioner = 'nosuch',"));
  const std::string error = script_error(dir, "local job = ...\n\nactorpipe.plan(job)\n", with_args({job}));
  BOOST_TEST(contains(error, "script.lua:3: "), error);
  BOOST_TEST(contains(error, job + ":7: plan.partitioner: "), error);
  BOOST_TEST(contains(error, "stack traceback:"), error);
}

BOOST_AUTO_TEST_CASE(a_sandboxed_script_is_refused_processes_files_and_binary_chunks) {
  ScratchDir dir;
  BOOST_TEST(contains(script_error(dir, "os.execute('true')\n"),
                      "script.lua:1: os.execute is not available to a sandboxed script (run it with --allow-io)"));
  BOOST_TEST(contains(script_error(dir, "local f = io.open('x', 'w')\n"), "io.open is not available"));
  BOOST_TEST(contains(script_error(dir, "\n\nio.popen('true')\n"), "script.lua:3: io.popen is not available"));
  BOOST_TEST(contains(script_error(dir, "dofile('/etc/hostname')\n"), "dofile is not available"));
  BOOST_TEST(contains(script_error(dir, "require('lfs')\n"), "require is not available"));
  BOOST_TEST(contains(script_error(dir, "package.loadlib('x', 'y')\n"), "package.loadlib is not available"));
  BOOST_TEST(contains(script_error(dir, "assert(load(string.dump(function() end)))\n"), "binary chunk"));
  BOOST_TEST(script_error(dir, "assert(load('return 1')() == 1)\nassert(os.time() > 0)\n").empty());
  BOOST_TEST(contains(script_error(dir, "actorpipe.write_json('../x.json', {})\n"),
                      "a script writes only inside its output folder"));
  BOOST_TEST(!std::filesystem::exists(dir.path() / "x.json"));
  // Malformed arguments to the module are errors naming what is wrong.
  BOOST_TEST(contains(script_error(dir, "actorpipe.write_csv('a.csv', 5)\n"), "rows must be a list of tables"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.write_csv('a.csv', {1, 2})\n"), "rows[1] is not a table"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.write_json('a.json', {f = print})\n"),
                      "value.f: a function cannot be written as JSON"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.plan({}, 3)\n"), "overrides: expected a table and found a number"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.plan(42)\n"), "job: expected a table and found a number"));
  // With --allow-io, all of it.
  ScriptOptions io;
  io.allow_io = true;
  BOOST_TEST(
      script_error(
          dir, "assert(os.execute('true'))\nassert(io.open('" + (dir.path() / "y").string() + "', 'w')):close()\n", io)
          .empty());
  BOOST_TEST(std::filesystem::exists(dir.path() / "y"));
}

BOOST_AUTO_TEST_CASE(a_runaway_script_stops_at_its_timeout_or_when_cancelled) {
  ScratchDir dir;
  ScriptOptions timed;
  timed.timeout_s = 0.2;
  // pcall cannot swallow the stop: the loop around it runs on and is stopped again.
  std::string error = script_error(dir, "while true do pcall(function() while true do end end) end\n", timed);
  BOOST_TEST(contains(error, "script.lua:1: stopped after its --timeout of 0.2 s"), error);
  std::atomic<bool> cancel{true};
  ScriptOptions cancelled;
  cancelled.cancel = &cancel;
  error = script_error(dir, "local n = 0\nwhile true do n = n + 1 end\n", cancelled);
  BOOST_TEST(contains(error, "script.lua:2: interrupted"), error);
}

BOOST_AUTO_TEST_CASE(the_cli_plans_a_lua_job_and_runs_scripts_with_exit_2_on_errors) {
  ScratchDir dir;
  auto plan = test::run_cli("plan " + configs() + "/vgg16-4dev.lua --json");
  BOOST_TEST(plan.status == 0, plan.err);
  BOOST_TEST(nlohmann::json::parse(plan.out)["stages"].size() == 4u);
  const std::string typo = dir.write("typo.lua", vgg_job("    stages = 4,\n    micro_batchs = 8,"));
  auto bad = test::run_cli("simulate " + typo);
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err == "actorpipe: " + typo + ":8: plan.micro_batchs: unknown key, did you mean 'micro_batches'?\n");
  const std::string loop = dir.write("loop.lua", "print(...)\nwhile true do end\n");
  auto stopped = test::run_cli("script " + loop + " --timeout 0.2 --output " + (dir.path() / "out").string() + " a b");
  BOOST_TEST(stopped.status == 2);
  BOOST_TEST(stopped.out == "a\tb\n");
  BOOST_TEST(contains(stopped.err, "loop.lua:2: stopped after its --timeout of 0.2 s"), stopped.err);
}
