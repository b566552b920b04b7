// Lua: jobs written in Lua read by the same code as TOML jobs, their mistakes placed at
// the Lua source's lines; scripts sandboxed, stopped by a timeout or a cancel flag, and
// the module's plans, simulations, files, plots and runs; plugins written in Lua; and
// the scripts of scripts/.
#define BOOST_TEST_MODULE lua
#include <boost/test/unit_test.hpp>

#include <actorpipe/job.hpp>
#include <actorpipe/planner.hpp>
#include <actorpipe/plan_report.hpp>
#include <actorpipe/script.hpp>

#include "plugin/lua_plugins.hpp"
#include "config/source_keys.hpp"
#include "plot/trace_timeline.hpp"
#include "train/training_entry.hpp"

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <regex>
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

/// The Lua twins of shipped plugins (tests/lua_plugins/twins.lua).
std::string twins() { return (test::source_root() / "tests/lua_plugins/twins.lua").string(); }

/// A plugin search path of the default folders and `extra`.
PluginRegistry registry_with(const std::string& extra) {
  auto folders = PluginRegistry::default_folders();
  folders.push_back(extra);
  auto registry = PluginRegistry::discover(folders);
  REQUIRE_OK(registry);
  return std::move(*registry);
}

/// A job small enough to train in a second: a two-layer MLP on synthetic data, on
/// `stages` × `pipelines` CPU devices.
std::string tiny_job(const ScratchDir& dir, std::size_t stages, std::size_t pipelines, const std::string& extra = "") {
  return dir.write("tiny.toml", test::cpu_cluster_toml(stages * pipelines, "1 GiB") +
                                    "[job]\nname = \"tiny\"\n[model]\nzoo = \"mlp\"\nlayers = 2\nwidth = 16\n"
                                    "[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [8]\nclasses = 3\n"
                                    "[train]\nbatch_size = 32\nsteps = 20\n[plan]\nstages = " +
                                    std::to_string(stages) + "\npipelines = " + std::to_string(pipelines) +
                                    "\nmicro_batches = 2\n" + extra);
}

/// Where a script run from a test process finds the training runtime: built here.
void use_built_training_runtime() {
  train::set_training_library((test::build_root() / "actors/libactorpipe_training.so").string());
}

/// The text of an SVG file's <text> elements, its character references decoded.
std::string svg_text(const std::string& svg) {
  std::string out;
  const std::regex reference("&#x([0-9A-Fa-f]+);");
  for (std::sregex_iterator it(svg.begin(), svg.end(), reference), end; it != end; ++it) {
    const unsigned long c = std::stoul((*it)[1].str(), nullptr, 16);
    out += c < 128 ? static_cast<char>(c) : '?';
    // Elements follow one another: a tag between references separates two texts.
    const auto next = it->position() + it->length();
    if (next < static_cast<std::ptrdiff_t>(svg.size()) && svg[static_cast<std::size_t>(next)] == '<') out += '|';
  }
  return out;
}

/// A text an SVG file places: where its anchor is (and which end of it that is), its
/// size and what it says.
struct PlacedText {
  double x = 0, y = 0, size = 0;
  std::string anchor, text;
};

/// The <text> elements of an SVG file that PLplot wrote, each placed by its transform.
std::vector<PlacedText> svg_texts(const std::string& svg) {
  std::vector<PlacedText> out;
  const std::regex element("<text([^>]*)>([\\s\\S]*?)</text>");
  const std::regex transform("matrix\\(([-0-9.e ]+)\\)"), size("font-size=\"([0-9.]+)\""),
      anchor("text-anchor=\"([a-z]+)\"");
  for (std::sregex_iterator it(svg.begin(), svg.end(), element), end; it != end; ++it) {
    const std::string attributes = (*it)[1].str(), body = (*it)[2].str();
    std::smatch m, s, a;
    if (!std::regex_search(attributes, m, transform) || !std::regex_search(attributes, s, size) ||
        !std::regex_search(attributes, a, anchor))
      continue;
    std::istringstream numbers(m[1].str());
    double matrix[6] = {};
    for (double& v : matrix)
      numbers >> v;
    out.push_back({matrix[4], matrix[5], std::stod(s[1].str()), a[1].str(), svg_text(body)});
    while (!out.back().text.empty() && out.back().text.back() == '|')
      out.back().text.pop_back();
  }
  return out;
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
  // The table is read as TOML without TOML text: its key and place come as data.
  BOOST_TEST(job.error().key == "plan.micro_batchs");
  BOOST_TEST((job.error().place == SourcePlace{typo, 8}));

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

BOOST_AUTO_TEST_CASE(lua_values_too_deep_cyclic_or_with_metamethods_are_named_not_crashed_on) {
  // 40 tables deep overran Lua's stack (heap corruption), 100,000 deep or a cycle the C++
  // stack; metamethods ran where their errors jumped past C++ (an abort). One walk reads
  // every Lua value that becomes JSON or TOML: depth-bounded, cycle-checked, raw.
  ScratchDir dir;
  const std::string nest = "local function nest(n) local t = {} for i = 1, n do t = { t } end return t end\n";
  for (const int depth : {64, 1000, 100000})
    BOOST_TEST_CONTEXT("depth " << depth) {
      const std::string error =
          script_error(dir, nest + "actorpipe.write_json('deep.json', nest(" + std::to_string(depth) + "))\n");
      BOOST_TEST(contains(error, "tables nested deeper than 64 cannot be written"), error);
    }
  // Within the bound (40 deep corrupted the heap) it is written.
  for (const int depth : {40, 63}) {
    const std::string written = "fine" + std::to_string(depth) + ".json";
    BOOST_TEST(
        script_error(dir, nest + "actorpipe.write_json('" + written + "', nest(" + std::to_string(depth) + "))\n")
            .empty());
    BOOST_TEST(std::filesystem::exists(dir.path() / "out" / written));
  }
  for (const auto& [source, message] : std::vector<std::pair<std::string, std::string>>{
           {"local t = {} t.self = t\nactorpipe.write_json('x.json', t)\n",
            "value.self: a table that contains itself cannot be written"},
           {"local row = { a = 1 } row.b = { row }\nactorpipe.write_csv('x.csv', { row })\n",
            "a table that contains itself cannot be written"},
           {"actorpipe.write_json('x.json', { name = '\\255\\254' })\n",
            "value.name: a string that is not UTF-8 cannot be written"},
           // A lead byte past F4, an overlong '/', a surrogate: the fuzzer's find.
           {"actorpipe.write_json('x.json', { '\\247\\160\\160\\179' })\n", "value[1]: a string that is not UTF-8"},
           {"actorpipe.write_json('x.json', { '\\192\\175' })\n", "value[1]: a string that is not UTF-8"},
           {"actorpipe.write_json('x.json', { '\\237\\160\\128' })\n", "value[1]: a string that is not UTF-8"}})
    BOOST_TEST_CONTEXT(source) {
      const std::string error = script_error(dir, source);
      BOOST_TEST(contains(error, message), error);
    }
  // Metamethods that fail, loop or lie are not run: the table is written as it is.
  const std::string error = script_error(dir, "local mean = { __len = function() error('boom') end,\n"
                                              "  __index = function() while true do end end }\n"
                                              "actorpipe.write_json('raw.json', setmetatable({ 1, 2 }, mean))\n");
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  BOOST_TEST(nlohmann::json::parse(read((dir.path() / "out/raw.json").string())) == nlohmann::json({1, 2}));
  // A Lua job whose table contains itself (plan.options) ran until killed.
  const std::string cyclic =
      dir.write("cyclic.lua", "local settings = {}\nsettings.again = settings\n" +
                                  vgg_job("    stages = 4,\n    options = { uniform = settings },"));
  auto job = load_job(cyclic);
  BOOST_REQUIRE(!job.ok());
  BOOST_TEST(exit_status(job.error().code) == 2);
  BOOST_TEST(
      contains(job.error().message, "plan.options.uniform.again: a table that contains itself cannot be written"),
      job.error().message);
}

BOOST_AUTO_TEST_CASE(an_error_that_is_no_string_is_named_by_what_it_is) {
  // A table raised as an error printed "table: 0x…", or ran its __tostring, which may
  // fail in turn; nothing else said what happened.
  ScratchDir dir;
  for (const auto& [source, message] : std::vector<std::pair<std::string, std::string>>{
           {"error({ code = 7 })\n", "an error with a table value and no message"},
           {"error({ message = 'the cluster is gone' })\n", "the cluster is gone"},
           {"error(setmetatable({}, { __tostring = function() error('again') end }))\n",
            "an error with a table value and no message"},
           {"error(true)\n", "an error with a boolean value and no message"}})
    BOOST_TEST_CONTEXT(source) {
      const std::string error = script_error(dir, source);
      BOOST_TEST(contains(error, message), error);
      BOOST_TEST(!contains(error, "table: 0x"), error);
    }
}

BOOST_AUTO_TEST_CASE(a_lua_plugin_that_runs_away_is_stopped_at_its_time_limit) {
  // A plugin file that looped as it loaded hung every command that discovers plugins; a
  // plugin function that looped hung `plan`. Loading and each call have the limit
  // (10 s; shorter here), which a pcall around the loop does not escape.
  ScratchDir dir;
  const std::string at_load = dir.write("at_load.lua", "while true do end\n");
  auto loading = lua::load_plugin_file(at_load, 0.2);
  BOOST_REQUIRE(!loading.ok());
  BOOST_TEST(exit_status(loading.error().code) == 2);
  BOOST_TEST(contains(loading.error().message,
                      at_load + ": the plugin file failed: " + at_load + ":1: stopped after its time limit of 0.2 s"),
             loading.error().message);
  const std::string when_called =
      dir.write("when_called.lua", "actorpipe.register_partitioner('spin', function(ctx)\n"
                                   "  while true do pcall(function() while true do end end) end\nend)\n");
  auto loaded = lua::load_plugin_file(when_called, 0.2);
  REQUIRE_OK(loaded);
  BOOST_REQUIRE_EQUAL(loaded->size(), 1u);
  auto plugin = loaded->front().create();
  REQUIRE_OK(plugin);
  auto partitioner = std::dynamic_pointer_cast<Partitioner>(*plugin);
  BOOST_REQUIRE(partitioner);
  auto job = load_job(configs() + "/vgg16-4dev.toml");
  REQUIRE_OK(job);
  PlanContext context{.profile = job->profile, .cluster = job->cluster};
  // Twice: the second call has a time of its own, not what the first left.
  for (int call = 0; call < 2; ++call) {
    auto cuts = partitioner->partition(context);
    BOOST_REQUIRE(!cuts.ok());
    BOOST_TEST(contains(cuts.error().message, "stopped after its time limit of 0.2 s"), cuts.error().message);
  }
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

  // A job the script spells may name native code (plan.plugin_path), which runs as it
  // loads: sandboxed, only the command line's and the environment's folders are searched.
  const std::string plugin = std::string(std::getenv("ACTORPIPE_BROKEN_PLUGINS")) + "/throwing.so";
  const std::string planned = "local job = (function()\n" +
                              vgg_job("    stages = 4,\n    plugin_path = { '" + plugin + "' },") +
                              "end)()\nactorpipe.plan(job)\n";
  const std::string refused = script_error(dir, planned);
  BOOST_TEST(contains(refused, "plan.plugin_path: a sandboxed script loads plugins only from the folders its command "
                               "line (--plugin-path) and environment (ACTORPIPE_PLUGIN_PATH) name"),
             refused);
  const std::string empty_folder = (dir.path() / "no-plugins").string();
  std::filesystem::create_directories(empty_folder);
  BOOST_TEST(script_error(dir,
                          "local job = (function()\n" +
                              vgg_job("    stages = 4,\n    plugin_path = { '" + empty_folder + "' },") +
                              "end)()\nactorpipe.plan(job)\n",
                          io)
                 .empty());
}

BOOST_AUTO_TEST_CASE(a_link_planted_in_the_output_folder_leads_no_write_or_sandboxed_read_out) {
  ScratchDir dir;
  const auto outside = dir.path() / "outside";
  const auto out = dir.path() / "out";
  std::filesystem::create_directories(outside / "run");
  std::filesystem::create_directories(out);
  std::filesystem::create_directory_symlink(outside, out / "link");
  std::filesystem::create_directory_symlink(outside / "run", out / "run");
  for (const char* write :
       {"actorpipe.write_json('link/x.json', {})\n", "actorpipe.write_csv('link/deeper/x.csv', {})\n",
        "actorpipe.plot_bars('link/x.svg', { categories = { 'a' }, values = { 1 } })\n"}) {
    const std::string error = script_error(dir, write);
    BOOST_TEST(contains(error, (out / "link").string() + ": is a symbolic link inside an output folder"), error);
  }
  BOOST_TEST(std::filesystem::is_empty(outside / "run"));
  BOOST_TEST(std::distance(std::filesystem::directory_iterator(outside), {}) == 1); // run/ alone
  // A trace read through a link inside the folder is a read outside it.
  dir.write("outside/run/trace.json", "{\"traceEvents\": []}");
  const std::string read = script_error(dir, "actorpipe.plot_timeline('x.svg', 'run')\n");
  BOOST_TEST(contains(read, "a sandboxed script reads files only inside its output folder"), read);
  BOOST_TEST(!std::filesystem::exists(out / "x.svg"));
  // The output folder itself may be reached through a link: it is the user's path.
  std::filesystem::create_directory_symlink(outside, dir.path() / "linked-out");
  ScriptOptions linked;
  linked.output_dir = (dir.path() / "linked-out").string();
  BOOST_TEST(script_error(dir, "actorpipe.write_json('sub/y.json', {})\n", linked).empty());
  BOOST_TEST(std::filesystem::is_regular_file(outside / "sub/y.json"));
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

BOOST_AUTO_TEST_CASE(a_script_s_lua_values_stop_at_their_memory_limit_whatever_it_catches) {
  ScratchDir dir;
  ScriptOptions small;
  small.memory_limit_mib = 16;
  // pcall cannot swallow the stop: the loop around it is stopped too.
  const std::string error = script_error(
      dir, "while true do\n  pcall(function() local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end end)\nend\n",
      small);
  BOOST_TEST(contains(error, "script.lua:2: its Lua values took more than their limit of 16 MiB"), error);
  // What stays under the limit runs as before.
  BOOST_TEST(script_error(dir, "local t = {} for i = 1, 1e4 do t[i] = ('x'):rep(64) .. i end\n", small).empty());
}

BOOST_AUTO_TEST_CASE(lua_that_no_hook_stops_ends_the_command_at_its_limit) {
  // A finaliser (no hook runs in one), one long library call and an error handler that
  // loops: the watchdog ends the command, exit 2, naming the file and its limit.
  ScratchDir dir;
  const std::pair<const char*, const char*> scripts[] = {
      {"finaliser.lua", "setmetatable({}, { __gc = function() while true do end end })\n"},
      {"pattern.lua", "local s = ('a'):rep(40)\nprint(s:find(('a-'):rep(14) .. 'b'))\n"},
      {"handler.lua", "while true do xpcall(error, function() while true do end end) end\n"},
  };
  for (const auto& [name, source] : scripts) {
    BOOST_TEST_CONTEXT(name) {
      const std::string path = dir.write(name, source);
      const auto run = test::run_cli("script " + path + " --timeout 0.3 --output " + (dir.path() / "out").string());
      BOOST_TEST(run.status == 2);
      BOOST_TEST(contains(run.err, path + ": stopped after its --timeout of 0.3 s (Lua ran on where no hook stops it"),
                 run.err);
    }
  }
  // Ctrl-C in a finaliser: the command ends as Ctrl-C ends any, 130.
  const std::string closing = dir.write(
      "closing.lua", "setmetatable({}, { __gc = function() while true do end end })\nio.stderr:write('closing\\n')\n");
  test::RunningCli run({"script", closing, "--allow-io", "--output", (dir.path() / "out").string()});
  BOOST_REQUIRE_MESSAGE(run.wait_for_line("closing"), run.err);
  run.signal(SIGINT);
  BOOST_TEST(run.wait() == 130);
  BOOST_TEST(contains(run.err, closing + ": interrupted (Lua ran on where no hook stops it"), run.err);
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
  for (const char* limit : {"0", "lots", "1048577"}) {
    auto refused = test::run_cli("script " + loop + " --memory-limit " + limit);
    BOOST_TEST(refused.status == 2);
    BOOST_TEST(contains(refused.err, std::string("--memory-limit: Value ") + limit), refused.err);
  }
}

BOOST_AUTO_TEST_CASE(plugins_written_in_lua_plan_as_their_cpp_twins) {
  const PluginRegistry registry = registry_with(twins());
  const auto* record = registry.find(PluginKind::partitioner, "lua-uniform");
  BOOST_REQUIRE(record);
  BOOST_TEST(record->file == twins() + ":3"); // where its function is, which messages name
  BOOST_TEST(record->version == "1.0.0");
  auto job = load_job(configs() + "/vgg16-4dev.toml", {"plan.micro_batches=4"});
  REQUIRE_OK(job);
  auto cpp = make_plan(*job, registry);
  job->plan.partitioner = "lua-uniform";
  job->plan.mapper = "lua-sequential";
  job->plan.scheduler = "lua-gpipe";
  auto with_lua_gpipe = make_plan(*job, registry);
  job->plan.scheduler = "gpipe";
  auto cpp_gpipe = make_plan(*job, registry);
  job->plan.partitioner = "uniform";
  job->plan.mapper = "sequential";
  job->plan.scheduler = "gpipe";
  auto cpp_all = make_plan(*job, registry);
  REQUIRE_OK(cpp);
  REQUIRE_OK(with_lua_gpipe);
  REQUIRE_OK(cpp_all);
  const auto lua = nlohmann::json::parse(plan_to_json(*with_lua_gpipe, job->profile, job->cluster));
  const auto original = nlohmann::json::parse(plan_to_json(*cpp_all, job->profile, job->cluster));
  BOOST_TEST(lua["partitioner"] == "lua-uniform");
  BOOST_TEST(lua["stages"].size() == 4u);
  for (const char* key : {"stages", "schedule_actions", "iteration_time_ms", "micro_batch_sizes"})
    BOOST_TEST(lua[key] == original[key], key);

  // A sync policy's round comes back as the C++ type.
  auto sync = registry.sync_policy("lua-all");
  REQUIRE_OK(sync);
  auto round = (*sync)->round({0, 3, 1, {0.1, 0.2, 0.3}, {}});
  REQUIRE_OK(round);
  BOOST_TEST((round->kind == SyncRound::Kind::allreduce_gradients));
  BOOST_REQUIRE(round->groups.size() == 1u);
  BOOST_TEST(round->groups[0] == (std::vector<std::size_t>{0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failing_or_malformed_lua_plugin_is_named_with_its_line) {
  ScratchDir dir;
  const std::string file =
      dir.write("bad.lua", "actorpipe.register_partitioner('raises', function(ctx)\n"
                           "  local t = nil\n"
                           "  return t.cuts\n"
                           "end)\n"
                           "actorpipe.register_partitioner('garbage', function(ctx)\n"
                           "  return { cuts = { 0, 'x' } }\n"
                           "end)\n"
                           "actorpipe.register_partitioner('short', function(ctx)\n"
                           "  return { 0, #ctx.profile.blocks }\n"
                           "end)\n"
                           "actorpipe.register_scheduler('deadlock', function(r)\n"
                           "  return 'name = \"x\"\\nmicro_batch_sizes = [16, 16]\\n' ..\n"
                           "         'stages = [\"B0 F0 F1 B1\"]'\n"
                           "end)\n"
                           "actorpipe.register_sync('shrinking', function(r)\n"
                           "  return { kind = 'scheduled_averaging', scheduling = { grow = 0.5 } }\n"
                           "end)\n"
                           "actorpipe.register_sync('overlapping', function(r)\n"
                           "  return { kind = 'scheduled_averaging', scheduling = { overlap = 1 } }\n"
                           "end)\n"
                           "actorpipe.register_sync('overshooting', function(r)\n"
                           "  return { kind = 'elastic_asynchronous', alpha = 2 }\n"
                           "end)\n"
                           "actorpipe.register_sync('never', function(r)\n"
                           "  return { kind = 'elastic_asynchronous', alpha = 0.1, period = 0 }\n"
                           "end)\n");
  const PluginRegistry registry = registry_with(file);
  auto job = load_job(configs() + "/vgg16-4dev.toml", {"plan.stages=1", "plan.micro_batches=2"});
  REQUIRE_OK(job);
  const auto error_of = [&](const std::string& partitioner, const std::string& scheduler = "1f1b") {
    job->plan.partitioner = partitioner;
    job->plan.scheduler = scheduler;
    auto plan = make_plan(*job, registry);
    BOOST_REQUIRE(!plan);
    BOOST_TEST(exit_status(plan.error().code) == 2);
    return plan.error().message;
  };
  std::string message = error_of("raises");
  BOOST_TEST(contains(message, "partitioner 'raises' (" + file + ":1): " + file + ":3: attempt to index a nil value"),
             message);
  message = error_of("garbage");
  BOOST_TEST(contains(message, "partitioner 'garbage' (" + file + ":5): returned cuts[2]: expected a block number"),
             message);
  job->plan.stages = 4;
  message = error_of("short");
  BOOST_TEST(contains(message, "partitioner 'short' (" + file + ":8): returned 2 cuts for 4 stages"), message);
  job->plan.stages = 1;
  message = error_of("uniform", "deadlock");
  BOOST_TEST(contains(message, "scheduler 'deadlock' (" + file + ":11): "), message);
  BOOST_TEST(contains(message, "B0): a backward before the micro-batch's forward"), message);
  // A sync policy's round 0 that could not run (group scheduling, or elastic averaging's
  // rate and period) or does not read is refused when planning, not at the run's first
  // step, naming the function's line.
  job->plan.scheduler = "1f1b";
  for (const auto& [sync, expected] : std::vector<std::pair<std::string, std::string>>{
           {"shrinking", ":15): returned group scheduling that cannot run: grow must be above 1"},
           {"overlapping", ":18): returned scheduling.overlap: expected true or false, found 1"},
           {"overshooting", ":21): returned elastic averaging that cannot run: elastic rate 2 "
                            "(it must be in (0, 1])"},
           {"never", ":24): returned period: 0 (a pipeline moves every this many steps, at least 1)"}}) {
    job->plan.sync = sync;
    message = error_of("uniform");
    BOOST_TEST(contains(message, "sync '" + sync + "' (" + file + expected), message);
  }
  job->plan.sync = "allreduce";

  // A file that registers nothing, or fails, is refused at discovery, named.
  const std::string empty = dir.write("empty.lua", "local x = 1\n");
  auto refused = PluginRegistry::discover({empty});
  BOOST_REQUIRE(!refused);
  BOOST_TEST(contains(refused.error().message, empty + ": a plugin file registers at least one plugin"));
  const std::string sandboxed = dir.write("sandboxed.lua", "os.execute('true')\n");
  refused = PluginRegistry::discover({sandboxed});
  BOOST_REQUIRE(!refused);
  BOOST_TEST(contains(refused.error().message, sandboxed + ":1: os.execute is not available"), refused.error().message);
}

BOOST_AUTO_TEST_CASE(a_script_registers_plugins_and_plans_with_them) {
  ScratchDir dir;
  const std::string error = script_error(dir, R"(
actorpipe.register_partitioner("halves", function(ctx)
  return { 0, #ctx.profile.blocks // 2, #ctx.profile.blocks }
end, { description = "two stages" })
local listed = false
for _, p in ipairs(actorpipe.plugins().plugins) do listed = listed or p.name == "halves" end
assert(listed, "plugins() lists the script's own")
local plan = actorpipe.plan(..., { plan = { partitioner = "halves", stages = 2 } })
actorpipe.write_json("plan.json", plan)
)",
                                         with_args({configs() + "/vgg16-4dev.toml"}));
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  const auto plan = nlohmann::json::parse(read((dir.path() / "out/plan.json").string()));
  BOOST_TEST(plan["partitioner"] == "halves");
  BOOST_TEST(plan["stages"][1]["begin"]["block"] == plan["model_blocks"].get<int>() / 2);
}

BOOST_AUTO_TEST_CASE(a_lua_partitioner_named_in_a_toml_job_is_used_by_plan_and_run) {
  ScratchDir dir;
  // The example plugin built in this tree (greedy.so) and its Lua twin, on the path.
  const std::string lua_twin = (test::source_root() / "examples/custom_plugin/greedy.lua").string();
  const std::string cpp_twin = (test::broken_plugins() / "greedy.so").string();
  const std::string job =
      tiny_job(dir, 2, 1, "partitioner = \"greedy-lua\"\nplugin_path = [\"" + lua_twin + "\", \"" + cpp_twin + "\"]\n");
  // One profile for every command, so that their plans can be compared.
  auto profiled = test::run_cli("profile " + job + " --repeats 1 -o " + (dir.path() / "tiny.profile.toml").string());
  BOOST_REQUIRE_MESSAGE(profiled.status == 0, profiled.err);
  const std::string profile = " --profile " + (dir.path() / "tiny.profile.toml").string();
  auto lua = test::run_cli("plan " + job + profile + " --json");
  auto cpp = test::run_cli("plan " + job + profile + " --partitioner greedy --json");
  BOOST_REQUIRE_MESSAGE(lua.status == 0, lua.err);
  BOOST_REQUIRE_MESSAGE(cpp.status == 0, cpp.err);
  const auto lua_plan = nlohmann::json::parse(lua.out), cpp_plan = nlohmann::json::parse(cpp.out);
  BOOST_TEST(lua_plan["partitioner"] == "greedy-lua");
  BOOST_TEST(cpp_plan["partitioner"] == "greedy");
  BOOST_TEST(lua_plan["stages"] == cpp_plan["stages"]);
  const std::string out = (dir.path() / "run").string();
  auto run = test::run_cli("run " + job + profile + " --steps 2 -o " + out);
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  const auto run_plan = nlohmann::json::parse(read(out + "/plan.json"));
  BOOST_TEST(run_plan["partitioner"] == "greedy-lua");
  BOOST_TEST(run_plan["stages"] == lua_plan["stages"]);
}

BOOST_AUTO_TEST_CASE(a_script_trains_and_on_step_returning_false_stops_at_a_checkpoint) {
  use_built_training_runtime();
  ScratchDir dir;
  const std::string job = tiny_job(dir, 2, 1);
  const std::string error = script_error(dir, R"(
local seen, evaluations = {}, 0
local run = actorpipe.run(..., {
  steps = 12,
  output = "stopped",
  on_step = function(m)
    seen[#seen + 1] = m.loss
    if m.step == 3 then return false end
  end,
  on_evaluation = function(e) evaluations = evaluations + 1 end,
})
actorpipe.write_json("run.json", { run = run, seen = #seen, evaluations = evaluations })
local second = actorpipe.run(..., { steps = 2 })
actorpipe.write_json("second.json", second)
)",
                                         with_args({job}));
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  const auto written = nlohmann::json::parse(read((dir.path() / "out/run.json").string()));
  const auto& run = written["run"];
  BOOST_TEST(run["stopped"] == true);
  // The stop waits for a step with none queued behind it: the one after the third.
  BOOST_TEST(run["steps"].get<int>() >= 3);
  BOOST_TEST(run["steps"].get<int>() <= 4);
  BOOST_TEST(written["seen"] == run["steps"]);
  BOOST_TEST(written["evaluations"] == 0); // stopped before the run's end
  BOOST_TEST(std::filesystem::exists(dir.path() / "out/stopped/checkpoint.pt"));
  for (const char* field : {"final_loss", "samples_per_s", "median_step_ms", "predicted_step_ms", "output_dir"})
    BOOST_TEST(run.contains(field), field);
  // A run without a name of its own goes to the job's name.
  const auto second = nlohmann::json::parse(read((dir.path() / "out/second.json").string()));
  BOOST_TEST(second["steps"] == 2);
  BOOST_TEST(second["stopped"] == false);
  BOOST_TEST(std::filesystem::exists(dir.path() / "out/tiny/trace.json"));

  // An error in a callback stops the run and comes back named, with the script's line.
  const std::string failed = script_error(dir,
                                          "actorpipe.run(..., { steps = 8, output = 'failed',\n"
                                          "  on_step = function(m) error('no more') end })\n",
                                          with_args({job}));
  BOOST_TEST(contains(failed, "on_step: "), failed);
  BOOST_TEST(contains(failed, "script.lua:2: no more"), failed);
  BOOST_TEST(contains(failed, "the run stopped after step"), failed);
  // From a coroutine: its callbacks run on the coroutine's stack (they ran on the main
  // thread's), and one that yields is told why it cannot.
  BOOST_TEST(script_error(dir,
                          "local job = ...\nlocal seen = 0\nlocal run = coroutine.wrap(function()\n"
                          "  return actorpipe.run(job, { steps = 3, output = 'in-coroutine',\n"
                          "    on_step = function(m) seen = seen + 1 end })\nend)()\n"
                          "assert(seen == 3 and run.steps == 3, seen)\n",
                          with_args({job}))
                 .empty());
  const std::string yielded =
      script_error(dir,
                   "local job = ...\nprint(coroutine.wrap(function()\n  actorpipe.run(job, { steps = 3, output = "
                   "'yielding', on_step = function(m) coroutine.yield(m.step) end })\nend)())\n",
                   with_args({job}));
  BOOST_TEST(contains(yielded, "on_step: attempt to yield across a C-call boundary (a function that actorpipe calls "
                               "back, such as a run's on_step or a plugin's, cannot yield)"),
             yielded);
  BOOST_TEST(!contains(yielded, "error object is not a string"), yielded);
  BOOST_TEST(contains(script_error(dir, "actorpipe.run(..., { step = 3 })\n", with_args({job})),
                      "run: unknown option 'step' (steps, epochs, output, resume, pin, stall_timeout, on_step, "
                      "on_evaluation)"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.run(..., { steps = 2, stall_timeout = -1 })\n", with_args({job})),
                      "run: option 'stall_timeout' must be seconds from 0 to 86400"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.run(..., { stall_timeout = 'soon' })\n", with_args({job})),
                      "run: option 'stall_timeout' must be a number, not a string"));
}

BOOST_AUTO_TEST_CASE(a_script_exports_the_imported_model_a_run_trained) {
  use_built_training_runtime();
  ScratchDir dir;
  const std::string job = dir.write(
      "flat.toml", test::cpu_cluster_toml(1, "1 GiB") +
                       "[job]\nname = \"flat\"\n[model]\nzoo = \"torchscript\"\nfile = \"" +
                       (test::source_root() / "tests/fixtures/flatten-linear.pt").string() +
                       "\"\n[data]\ndataset = \"synthetic\"\nsamples = 256\nshape = [1, 28, 28]\nclasses = 10\n"
                       "[train]\nbatch_size = 32\n[plan]\nstages = 1\npipelines = 1\nmicro_batches = 1\n");
  const std::string error = script_error(dir, R"(
actorpipe.run(..., { steps = 3, output = "trained" })
actorpipe.write_json("exported.json", actorpipe.export_model("trained", "models/flat.pt"))
)",
                                         with_args({job}));
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  const auto exported = nlohmann::json::parse(read((dir.path() / "out/exported.json").string()));
  BOOST_TEST(exported["step"] == 3);
  BOOST_TEST(exported["parameters"] == 2); // the Linear's weight and bias
  BOOST_TEST(exported["buffers"] == 0);
  BOOST_TEST(exported["module_file"] == (dir.path() / "out/models/flat.pt").string());
  BOOST_TEST(std::filesystem::exists(dir.path() / "out/models/flat.pt"));
  BOOST_TEST(std::filesystem::exists(dir.path() / "out/models/flat.state_dict.pt"));
  // A folder that holds no run of an imported model, and a file outside the output
  // folder, are named.
  BOOST_TEST(contains(script_error(dir, "actorpipe.export_model('empty', 'x.pt')\n"),
                      "no model.json: only a run of an imported TorchScript model"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.export_model('trained', '../x.pt')\n"),
                      "a script writes only inside its output folder"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.export_model('trained')\n"),
                      "export_model: expected the run's folder and the file to write, both names"));
}

BOOST_AUTO_TEST_CASE(profile_options_out_of_bounds_are_named_not_wrapped) {
  // 0 timed passes had no median to take (a crash); 2^32 wrapped to 0 on its way to
  // 32 bits. Every count is checked against its bounds before it is narrowed.
  use_built_training_runtime();
  ScratchDir dir;
  const std::string job = tiny_job(dir, 1, 1);
  for (const auto& [options, message] : std::vector<std::pair<std::string, std::string>>{
           {"{ repeats = 0 }", "profile: option 'repeats' must be a whole number from 1 to 100000"},
           {"{ repeats = 2^32 }", "profile: option 'repeats' must be a whole number from 1 to 100000"},
           {"{ warmup = 2^32 + 1 }", "profile: option 'warmup' must be a whole number from 0 to 100000"},
           {"{ batch_size = 2^32 }", "profile: option 'batch_size' must be a whole number from 0 to 16777216"},
           {"{ threads = 2^31 }", "profile: option 'threads' must be a whole number from 0 to 4096"}})
    BOOST_TEST_CONTEXT(options) {
      const std::string error = script_error(dir, "actorpipe.profile(..., " + options + ")\n", with_args({job}));
      BOOST_TEST(contains(error, message), error);
    }
  BOOST_TEST(contains(script_error(dir, "actorpipe.run(..., { steps = 2^41 })\n", with_args({job})),
                      "run: option 'steps' must be a whole number from 0 to 1099511627776"));
}

BOOST_AUTO_TEST_CASE(plots_are_drawn_and_bad_chart_data_is_named) {
  ScratchDir dir;
  const std::string error = script_error(dir, R"(
actorpipe.plot_lines("lines.svg", { title = "Loss", x_label = "step", y_label = "loss",
  series = { { label = "a", y = { 3, 2, 1.5 } }, { label = "b", x = { 1, 2, 3 }, y = { 3, 2.5, 2 } } } })
actorpipe.plot_bars("bars.svg", { title = "Throughput", y_label = "samples/s", categories = { "2", "4" },
  groups = { { label = "autopipe", values = { 10, 20 } }, { label = "uniform", values = { 8, 12 } } } })
)");
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  const std::string lines = svg_text(read((dir.path() / "out/lines.svg").string()));
  for (const char* text : {"Loss", "step", "loss", "|a|", "|b|"})
    BOOST_TEST(contains(lines, text), text << " in " << lines);
  const std::string bars = svg_text(read((dir.path() / "out/bars.svg").string()));
  for (const char* text : {"Throughput", "autopipe", "uniform", "|20|", "|12|"})
    BOOST_TEST(contains(bars, text), text << " in " << bars);

  // Long category names, more than fit side by side: every one is written, and no two
  // on one line meet (a character about half as wide as high).
  const std::vector<std::string> names = {
      "allreduce", "sdpipe",          "elastic",      "parameter-server",
      "ad-psgd",   "allreduce+tuned", "sdpipe+tuned", "elastic:asynchronous=true+afp+tuned"};
  std::string categories;
  for (const std::string& name : names)
    categories += "'" + name + "', ";
  const std::string long_names =
      script_error(dir, "actorpipe.plot_bars('long.svg', { categories = { " + categories +
                            "}, groups = { { label = 'no stragglers', values = { 1, 2, 3, 4, 5, 6, 7, 8 } }, "
                            "{ label = 'stragglers', values = { 8, 7, 6, 5, 4, 3, 2, 1 } } } })\n");
  BOOST_REQUIRE_MESSAGE(long_names.empty(), long_names);
  std::vector<PlacedText> placed;
  const std::string long_svg = read((dir.path() / "out/long.svg").string());
  for (const PlacedText& text : svg_texts(long_svg)) {
    if (std::find(names.begin(), names.end(), text.text) != names.end()) placed.push_back(text);
    // The legend's texts, and the box around them, stay on the 960-wide page.
    if (text.anchor == "start")
      BOOST_TEST(text.x + 0.55 * text.size * static_cast<double>(text.text.size()) + 10 <= 960, text.text);
  }
  BOOST_TEST(contains(long_svg, "width=\"960pt\""));
  BOOST_REQUIRE(placed.size() == names.size());
  for (std::size_t a = 0; a < placed.size(); ++a)
    for (std::size_t b = a + 1; b < placed.size(); ++b)
      if (std::abs(placed[a].y - placed[b].y) < 1) // one line
        BOOST_TEST(std::abs(placed[a].x - placed[b].x) >=
                       0.5 * placed[a].size * static_cast<double>(placed[a].text.size() + placed[b].text.size()) / 2,
                   placed[a].text << " and " << placed[b].text << " meet");

  BOOST_TEST(
      contains(script_error(dir, "actorpipe.plot_lines('x.svg', { series = { { y = { 1, 0 } } }, log_y = true })\n"),
               "point 2 has y 0, which a logarithmic axis cannot show"));
  BOOST_TEST(
      contains(script_error(dir, "actorpipe.plot_lines('x.svg', { series = { { x = { 1 }, y = { 1, 2 } } } })\n"),
               "1 x values and 2 y values"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.plot_bars('x.svg', { categories = { 'a' }, values = { 'n' } })\n"),
                      "chart.values[1]: expected a number"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.plot_bars('x.svg', { categories = { 'a' }, colour = 'red' })\n"),
                      "plot_bars: unknown option 'colour'"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.plot_timeline('x.svg', '/etc')\n"),
                      "a sandboxed script reads files only inside its output folder"));
  BOOST_TEST(!std::filesystem::exists(dir.path() / "out/x.svg"));
}

BOOST_AUTO_TEST_CASE(charts_label_what_they_show_and_scripts_read_back_json_and_a_runs_metrics) {
  ScratchDir dir;
  use_built_training_runtime();
  const std::string job = tiny_job(dir, 2, 1);
  // A log axis inside one power of ten, whole-number x values, two lines on each other,
  // names without .svg; then a run's metrics and a JSON file read back.
  const std::string error = script_error(dir, R"(
local job = ...
actorpipe.plot_bars("grouped", { categories = { "a", "b", "c", "d", "e", "f" }, groups = {
  { label = "x", values = { 1201, 1202, 1203, 1204, 1205, 1206 } },
  { label = "y", values = { 1301, 1302, 1303, 1304, 1305, 1306 } },
  { label = "z", values = { 1401, 1402, 1403, 1404, 1405, 1406 } } } })
actorpipe.plot_lines("narrow", { log_y = true, series = {
  { label = "a", x = { 1, 2, 3, 4 }, y = { 2, 3, 4, 6 } }, { label = "b", x = { 1, 2, 3, 4 }, y = { 2, 3, 4, 6 } } } })
local run = actorpipe.run(job, { steps = 4, output = "run" })
local lines = actorpipe.read_metrics(run.output_dir)
assert(#lines == 5, #lines)
assert(lines[4].kind == "step" and lines[4].step == 4 and lines[4].loss > 0)
assert(lines[5].kind == "evaluation" and lines[5].test_accuracy >= 0)
actorpipe.write_json("back.json", { a = { 1, 2 }, b = "x" })
local back = actorpipe.read_json("back.json")
assert(back.a[2] == 2 and back.b == "x")
-- A simulation's trace, where the job asks for one, plotted as a run's is.
local simulated = actorpipe.simulate(actorpipe.load_job(select(2, ...), { simulate = { trace = "sim.json", iterations = 3 } }))
assert(simulated.trace:find("sim.json", 1, true), simulated.trace)
actorpipe.plot_timeline("sim", simulated.trace)
actorpipe.plot_timeline("sim-steps", simulated.trace, { first_step = 2, last_step = 3 })
-- An asynchronous run: pipeline 1 never reached step 3, which pipeline 0 ran.
actorpipe.write_json("async/trace.json", { traceEvents = {
  { ph = "M", name = "process_name", pid = 0, args = { name = "pipeline 0" } },
  { ph = "M", name = "process_name", pid = 1, args = { name = "pipeline 1" } },
  { ph = "X", name = "forward 0", cat = "forward", pid = 0, tid = 0, ts = 100, dur = 100, args = { step = 3 } },
  { ph = "X", name = "forward 0", cat = "forward", pid = 0, tid = 0, ts = 300, dur = 100, args = { step = 4 } },
  { ph = "X", name = "forward 0", cat = "forward", pid = 1, tid = 0, ts = 50, dur = 100, args = { step = 1 } },
  { ph = "X", name = "forward 0", cat = "forward", pid = 1, tid = 0, ts = 160, dur = 100, args = { step = 2 } } } })
actorpipe.plot_timeline("async", "async", { first_step = 3, last_step = 3 })
)",
                                         with_args({job, (test::source_root() / "configs/vgg16-4dev.toml").string()}));
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  BOOST_REQUIRE(std::filesystem::exists(dir.path() / "out/narrow.svg"));
  // Bars too narrow for their values across them still carry them, standing.
  const std::string grouped = svg_text(read((dir.path() / "out/grouped.svg").string()));
  for (int group = 12; group <= 14; ++group)
    for (int c = 1; c <= 6; ++c)
      BOOST_TEST(contains(grouped, "|" + std::to_string(group * 100 + c) + "|"), group * 100 + c << " in " << grouped);
  const std::string narrow = svg_text(read((dir.path() / "out/narrow.svg").string()));
  // The y axis labelled at 2, 5 and the digits between (PLplot alone labels no power of
  // ten here); the x axis at 1, 2, 3, 4 and not between.
  for (const char* text : {"|2|", "|3|", "|4|", "|5|"})
    BOOST_TEST(contains(narrow, text), text << " in " << narrow);
  BOOST_TEST(!contains(narrow, "|1.5|"), narrow);
  BOOST_TEST(!contains(narrow, "|2.5|"), narrow);
  // The first line solid (one stroke, and its markers), the second, on top of it,
  // dashed: PLplot draws a dash as a stroke of its own.
  const std::string svg = read((dir.path() / "out/narrow.svg").string());
  const auto strokes = [&](const std::string& colour) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = svg.find("stroke=\"" + colour + "\"", at)) != std::string::npos; ++at)
      ++n;
    return n;
  };
  BOOST_TEST(strokes("#1F77B4") <= 6u);
  BOOST_TEST(strokes("#FF7F0E") > 20u);
  // A script that measures says how, as the command line does (and warns where the
  // timed passes differ widely).
  const std::string measuring = dir.write("measuring.lua", "actorpipe.profile(..., { repeats = 1, warmup = 0 })\n");
  const auto measured =
      test::run_cli("script " + measuring + " --output " + (dir.path() / "measured").string() + " " + job);
  BOOST_TEST(measured.status == 0, measured.err);
  BOOST_TEST(contains(measured.err, "actorpipe: measured after 0 warm-up passes"), measured.err);
  BOOST_TEST(contains(measured.err, "1 timed at the batch"), measured.err);
  const std::string simulated = svg_text(read((dir.path() / "out/sim.svg").string()));
  for (const char* text : {"forward", "backward", "|3|", "stage 3", "step 3"})
    BOOST_TEST(contains(simulated, text), text << " in " << simulated);
  // Its spans carry their iteration as a run's carry their step: steps 2 and 3 drawn,
  // step 3 begun on each of the four stages' compute rows (not on their send and sync
  // rows), step 4 absent.
  const std::string steps = svg_text(read((dir.path() / "out/sim-steps.svg").string()));
  BOOST_TEST(contains(steps, "steps 2 to 3"), steps);
  std::size_t begun = 0;
  for (std::size_t at = 0; (at = steps.find("|step 3|", at)) != std::string::npos; ++at)
    ++begun;
  BOOST_TEST(begun == 4u, steps);
  BOOST_TEST(!contains(steps, "step 4"), steps);
  const std::string async = svg_text(read((dir.path() / "out/async.svg").string()));
  for (const char* text : {"pipeline 0", "pipeline 1", "step 2"})
    BOOST_TEST(contains(async, text), text << " in " << async);
  BOOST_TEST(!contains(async, "step 4"), async);
  BOOST_TEST(contains(script_error(dir, "actorpipe.read_json('/etc/hostname')\n"),
                      "read_json: '/etc/hostname': a sandboxed script reads files only inside its output folder"));
  BOOST_TEST(contains(script_error(dir, "actorpipe.read_metrics('nowhere')\n"), "out/nowhere: file not found"));
}

BOOST_AUTO_TEST_CASE(the_scripts_of_scripts_run_on_small_settings) {
  ScratchDir dir;
  const std::string scripts = (test::source_root() / "scripts").string();
  std::string printed; // the last script's output
  const auto script = [&](const std::string& name, const std::string& args) {
    const std::string out = (dir.path() / name).string();
    auto result = test::run_cli("script " + scripts + "/" + name + ".lua --output " + out + " " + args);
    printed = result.out;
    BOOST_TEST_MESSAGE(name << ":\n" << result.out << result.err);
    BOOST_REQUIRE_MESSAGE(result.status == 0, name << ": " << result.err);
    return out;
  };
  // Partitioners × stages on a profile: a row per pair, a bar per partitioner.
  std::string out = script("sweep_partitioners", configs() + "/vgg16-4dev.toml autopipe,uniform 2,4");
  const std::string csv = read(out + "/partitioners.csv");
  BOOST_TEST(csv.rfind("partitioner,stages,pipelines,step_ms,samples_per_s,balance\n", 0) == 0u, csv);
  BOOST_TEST(std::count(csv.begin(), csv.end(), '\n') == 5);
  BOOST_TEST(contains(svg_text(read(out + "/partitioners.svg")), "autopipe"));

  // The schedules: simulated and measured.
  const std::string two_by_one = tiny_job(dir, 2, 1);
  ScratchDir four;
  const std::string two_by_two_job = tiny_job(four, 2, 2);
  out = script("compare_schedules", two_by_one + " 4");
  const std::string schedules = read(out + "/schedules.csv");
  for (const char* name : {"\ngpipe,", "\n1f1b,", "\nsliced-1f1b,", "\nafp,", "\nzb-h1,", "\nzb-h2,"})
    BOOST_TEST(contains(schedules, name), name);
  // What each stage held at once, measured: gpipe both micro-batches on both stages,
  // 1f1b one fewer on the last, zb-h1 both again (the last defers a W).
  BOOST_TEST(std::regex_search(schedules, std::regex("\ngpipe,([^,\n]*,){6}2 2,[^,\n]*\n")), schedules);
  BOOST_TEST(std::regex_search(schedules, std::regex("\n1f1b,([^,\n]*,){6}2 1,[^,\n]*\n")), schedules);
  BOOST_TEST(std::regex_search(schedules, std::regex("\nzb-h1,([^,\n]*,){6}2 2,[^,\n]*\n")), schedules);
  BOOST_TEST(std::filesystem::exists(out + "/schedules.svg"));

  // Loss curves of runs differing in one key.
  out = script("loss_curves", two_by_one + " 5 train.lr 0.01,0.1");
  const std::string losses = read(out + "/losses.csv");
  BOOST_TEST(std::count(losses.begin(), losses.end(), '\n') == 1 + 2 * 5);
  BOOST_TEST(contains(svg_text(read(out + "/losses.svg")), "train.lr = 0.1"));

  // Sync policies without and with stragglers: a row each, every target reached; the
  // tuned combination names the shape it chose; the plan against uniform + sequential.
  // Stragglers delay by twice a micro-batch's simulated compute.
  out = script("sync_experiments", two_by_two_job +
                                       " 22 allreduce,sdpipe,allreduce+tuned,elastic:asynchronous=true:tau=2+afp+tuned "
                                       "auto 100");
  std::smatch compute;
  BOOST_REQUIRE_MESSAGE(std::regex_search(printed, compute,
                                          std::regex("a micro-batch's compute: ([0-9.]+) ms \\(simulated\\); "
                                                     "stragglers: (delay:p=0.1,ms=([0-9.]+))")),
                        printed);
  BOOST_TEST(std::stod(compute[1]) > 0);
  BOOST_TEST(std::stod(compute[3]) == 2 * std::stod(compute[1]), boost::test_tools::tolerance(1e-6));
  const std::string sync = read(out + "/sync.csv");
  BOOST_TEST(sync.rfind("sync,stragglers,samples_per_s,predicted_samples_per_s,median_step_ms,ms_to_target,final_"
                        "loss,test_accuracy,shape\n",
                        0) == 0u,
             sync);
  // Each row carries what the simulator predicts of it.
  std::smatch predicted;
  BOOST_REQUIRE_MESSAGE(std::regex_search(sync, predicted, std::regex("\nsdpipe,,[0-9.e+]+,([0-9.e+]+),")), sync);
  BOOST_TEST(std::stod(predicted[1]) > 0);
  BOOST_TEST(std::count(sync.begin(), sync.end(), '\n') == 9);
  BOOST_TEST(contains(sync, "\nsdpipe,\"" + compute[2].str() + "\","), sync); // quoted: it holds a comma
  BOOST_TEST(!contains(sync, ",-1,"), sync); // a loss under 100 is reached after the first 20 steps
  BOOST_TEST(std::regex_search(
                 sync, std::regex("\nelastic:asynchronous=true:tau=2\\+afp\\+tuned,,[^\n]*,[1-4] x [1-4] x [0-9]+\n")),
             sync);
  // Each policy against the first, in samples/s and time to target; a tuned one also
  // against the first policy tuned, and only a tuned one.
  for (const char* setting : {"no stragglers", "stragglers"}) {
    const std::string against =
        std::string(": [0-9.]+x samples/s, [0-9.]+x the time to target, accuracy [-+][0-9.]+ points\n");
    BOOST_TEST(std::regex_search(printed, std::regex(std::string("\nsdpipe against allreduce, ") + setting + against)),
               printed);
    BOOST_TEST(std::regex_search(printed, std::regex(std::string("\nelastic:asynchronous=true:tau=2\\+afp\\+tuned "
                                                                 "against allreduce\\+tuned \\(both tuned\\), ") +
                                                     setting + against)),
               printed);
  }
  BOOST_TEST(!contains(printed, "sdpipe against allreduce+tuned"), printed);
  BOOST_TEST(!contains(printed, "allreduce+tuned against allreduce+tuned"), printed);
  const std::string plans = read(out + "/plans.csv");
  BOOST_TEST(plans.rfind("plan,samples_per_s,predicted_samples_per_s\n", 0) == 0u, plans);
  BOOST_TEST(contains(plans, "\nuniform + sequential,"), plans);
  BOOST_TEST(std::count(plans.begin(), plans.end(), '\n') == 3, plans);
  for (const char* chart : {"/sync_samples.svg", "/sync_time_to_target.svg", "/sync_losses.svg"})
    BOOST_TEST(contains(svg_text(read(out + chart)), "sdpipe"), chart);

  // The timeline of a real 2 × 2 run: 4 rows, each with forward and backward boxes.
  out = script("plot_timeline", two_by_two_job + " 3");
  auto timeline = plot::timeline_from_trace(read(out + "/run/trace.json"), "trace.json", {});
  REQUIRE_OK(timeline);
  BOOST_TEST(timeline->rows.size() == 4u);
  for (std::size_t row = 0; row < timeline->rows.size(); ++row)
    for (const std::string kind : {"forward", "backward"}) {
      const auto k = std::find(timeline->kinds.begin(), timeline->kinds.end(), kind) - timeline->kinds.begin();
      const auto boxes = std::count_if(timeline->boxes.begin(), timeline->boxes.end(), [&](const plot::TimelineBox& b) {
        return b.row == row && b.kind == static_cast<std::size_t>(k);
      });
      BOOST_TEST(boxes == 2, "row " << row << " " << kind); // one per micro-batch
    }
  const std::string drawn = svg_text(read(out + "/timeline.svg"));
  for (const char* row : {"pipeline 0, stage 0", "pipeline 0, stage 1", "pipeline 1, stage 0", "pipeline 1, stage 1"})
    BOOST_TEST(contains(drawn, row), row << " in " << drawn);
  BOOST_TEST(contains(drawn, "forward"));
  BOOST_TEST(contains(drawn, "backward"));
}
