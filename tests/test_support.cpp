#include "test_support.hpp"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace actorpipe::test {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  if (!value) throw std::runtime_error(std::string(name) + " is not set; run the tests with `meson test`");
  return value;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

const PluginRegistry& plugins() {
  static PluginRegistry instance = [] {
    auto r = PluginRegistry::discover(PluginRegistry::default_folders());
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
  }();
  return instance;
}

fs::path source_root() { return env("ACTORPIPE_SOURCE_ROOT"); }
fs::path build_root() { return env("ACTORPIPE_BUILD_ROOT"); }
fs::path broken_plugins() { return env("ACTORPIPE_BROKEN_PLUGINS"); }

ScratchDir::ScratchDir() {
  std::random_device device;
  path_ = fs::temp_directory_path() / ("actorpipe-test-" + std::to_string(device()) + std::to_string(device()));
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const std::string& content) const {
  const fs::path file = path_ / name;
  fs::create_directories(file.parent_path());
  std::ofstream(file) << content;
  return file.string();
}

CommandResult run_cli(const std::string& args) {
  ScratchDir scratch;
  const fs::path out = scratch.path() / "out", err = scratch.path() / "err";
  const std::string command =
      "'" + env("ACTORPIPE_CLI") + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int raw = std::system(command.c_str());
  CommandResult result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  return result;
}

std::string cpu_cluster_toml(std::size_t devices, const std::string& memory) {
  const std::string n = std::to_string(devices);
  return "[cluster]\nname = \"cpu-" + n + "\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n" +
         "[[cluster.servers]]\nname = \"local\"\n" + "pcie = { devices_per_switch = " + n +
         ", switch_bandwidth = \"10 GB/s\", inter_bridge_bandwidth = \"10 GB/s\" }\n" +
         "nic = { count = 1, bandwidth = \"10 GB/s\" }\n" + "devices = [{ kind = \"cpu\", count = " + n +
         ", speed = 1.0, memory = \"" + memory + "\" }]\n";
}

} // namespace actorpipe::test
