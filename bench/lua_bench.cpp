/// Lua benchmark: what Lua costs where users meet it.
///   1. One call of a partitioner written in Lua on a 1,000-block profile (the table of
///      the profile and cluster built, the function run, its cuts read back), against
///      the C++ plugin of the same algorithm, `uniform`.
///   2. `actorpipe script` starting and running an empty script, against `actorpipe
///      --version` (the program's own start).
///   build/bench/lua_bench [SOURCE_ROOT [BUILD_ROOT]]

#include <actorpipe/job.hpp>
#include <actorpipe/plugin_registry.hpp>

#include "base/text.hpp"
#include "base/text_table.hpp"

#include "call_timing.hpp"
#include "synthetic_chain.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace actorpipe;

namespace {

/// Median wall milliseconds of `command` run by the shell, over `runs` runs.
double median_command_ms(const std::string& command, int runs) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (std::system(command.c_str()) != 0) return -1;
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::string build = argc > 2 ? argv[2] : root + "/build";
  auto cluster = load_cluster(root + "/configs/clusters/cpu-4.toml");
  auto registry = PluginRegistry::discover(
      {build + "/plugins", root + "/tests/lua_plugins/twins.lua", root + "/examples/custom_plugin/greedy.lua"});
  if (!cluster || !registry) {
    std::cerr << "lua_bench: " << (!cluster ? cluster.error().message : registry.error().message)
              << " (run from the source folder, or pass it and the build folder)\n";
    return 2;
  }

  const ModelProfile profile = bench::synthetic_chain(1000);
  PlanContext context{profile, *cluster};
  context.stages = 8;
  text::Table calls({{"partitioner"},
                     {"written in"},
                     {"blocks", text::Table::Align::right},
                     {"ms per call", text::Table::Align::right},
                     {"vs C++ uniform", text::Table::Align::right}});
  double baseline = 0;
  for (const auto& [name, language] :
       {std::pair{"uniform", "C++"}, std::pair{"lua-uniform", "Lua"}, std::pair{"greedy-lua", "Lua"}}) {
    auto partitioner = registry->partitioner(name);
    if (!partitioner) {
      std::cerr << "lua_bench: " << partitioner.error().message << "\n";
      return 2;
    }
    const double ms = bench::median_call_ms([&] { return (*partitioner)->partition(context).ok(); });
    if (ms < 0) {
      std::cerr << "lua_bench: " << name << " failed on the profile\n";
      return 1;
    }
    if (baseline == 0) baseline = ms;
    calls.add_row({name, language, "1000", text::format_fixed(ms, 4), text::format_fixed(ms / baseline, 1) + "×"});
  }
  std::cout << "One partition() call, 1,000 blocks in 8 stages (median of 5 timed batches)\n" << calls.str() << "\n";

  const std::string cli = build + "/runtime/cli/actorpipe";
  const std::filesystem::path scratch = std::filesystem::temp_directory_path() / "actorpipe-lua-bench";
  std::filesystem::create_directories(scratch);
  std::ofstream(scratch / "empty.lua") << "-- nothing\n";
  text::Table starts(
      {{"command"}, {"median ms", text::Table::Align::right}, {"vs --version", text::Table::Align::right}});
  const double version = median_command_ms(cli + " --version >/dev/null", 21);
  const double script = median_command_ms(cli + " script " + (scratch / "empty.lua").string() + " --output " +
                                              (scratch / "out").string() + " >/dev/null",
                                          21);
  std::filesystem::remove_all(scratch);
  if (version < 0 || script < 0) {
    std::cerr << "lua_bench: " << cli << " failed\n";
    return 1;
  }
  starts.add_row({"actorpipe --version", text::format_fixed(version, 1), "1.0×"});
  starts.add_row(
      {"actorpipe script empty.lua", text::format_fixed(script, 1), text::format_fixed(script / version, 1) + "×"});
  std::cout << "Start-up, 21 runs each through the shell\n" << starts.str();
  return 0;
}
