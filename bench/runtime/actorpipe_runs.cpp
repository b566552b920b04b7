/// actorpipe in processes of its own, and what its runs wrote read back.

#include "actorpipe_runs.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

namespace actorpipe::bench {

namespace fs = std::filesystem;

void Cli::measure_profile(const std::string& job, const std::vector<std::string>& sets) {
  profile = scratch / "profile.toml";
  std::string command = "'" + actorpipe.string() + "' profile '" + job + "' -o '" + profile.string() + "'";
  for (const std::string& set : sets)
    command += " --set '" + set + "'";
  shell(command);
}

std::string Cli::shell(const std::string& command) const {
  const fs::path output = scratch / "stdout.txt", errors = scratch / "stderr.txt";
  if (std::system((command + " >'" + output.string() + "' 2>'" + errors.string() + "'").c_str()) != 0) {
    std::ifstream in(errors);
    fail(command + ":\n" + std::string(std::istreambuf_iterator<char>(in), {}));
  }
  std::ifstream in(output);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

nlohmann::json Cli::run_json(const std::string& job, std::vector<std::string> sets, std::uint64_t steps,
                             const fs::path& out, const std::string& flags, const std::string& command) const {
  if (!profile.empty()) sets.push_back("model.profile=\"" + profile.string() + "\"");
  fs::remove_all(out);
  std::string line = "'" + actorpipe.string() + "' " + command + " '" + job + "' --steps " + std::to_string(steps) +
                     " -o '" + out.string() + "' --json " + flags;
  for (const std::string& set : sets)
    line += " --set '" + set + "'";
  return nlohmann::json::parse(shell(line));
}

double Cli::predict(const std::string& job, std::vector<std::string> sets) const {
  return run_json(job, std::move(sets), 1, scratch / "predict", "")["predicted_step_ms"];
}

Cli::Outcome Cli::run(const std::string& job, std::vector<std::string> sets, std::uint64_t steps,
                      const std::string& flags, const std::string& command) const {
  const fs::path out = scratch / "run";
  const nlohmann::json summary = run_json(job, std::move(sets), warmup_steps + steps, out, flags, command);
  Outcome o;
  std::ifstream metrics(out / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m["kind"] == "step" && m["step"].get<std::uint64_t>() > warmup_steps) o.step_ms.push_back(m["step_ms"]);
  }
  o.predicted_ms = summary["predicted_step_ms"];
  o.trace = out / "trace.json";
  if (o.step_ms.empty()) fail(job + ": no timed steps in " + (out / "metrics.jsonl").string());
  return o;
}

HopLatency hop_latency(const fs::path& trace_file) {
  const auto trace = nlohmann::json::parse(std::ifstream(trace_file));
  // "stage S (DEVICE)" per (pid, tid); spans "forward M" / "backward M" in order.
  std::map<std::pair<int, int>, std::size_t> stage_of;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      stage_of[{e["pid"], e["tid"]}] = std::stoul(e["args"]["name"].get<std::string>().substr(6));
  struct Span {
    double begin, end;
  };
  // [pipeline pid][stage][kind] → spans in time order.
  std::map<int, std::map<std::size_t, std::map<std::string, std::vector<Span>>>> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    const std::string kind = name.substr(0, name.find(' '));
    if (kind != "forward" && kind != "backward") continue;
    const double ts = e["ts"], dur = e["dur"];
    spans[e["pid"]][stage_of[{e["pid"], e["tid"]}]][kind].push_back({ts, ts + dur});
  }
  std::vector<double> forward, backward;
  for (auto& [pid, stages] : spans)
    for (std::size_t s = 0; s + 1 < stages.size(); ++s) {
      const auto& f0 = stages[s]["forward"];
      const auto& f1 = stages[s + 1]["forward"];
      const auto& b0 = stages[s]["backward"];
      const auto& b1 = stages[s + 1]["backward"];
      for (std::size_t k = 0; k < std::min(f0.size(), f1.size()); ++k)
        forward.push_back(f1[k].begin - f0[k].end);
      for (std::size_t k = 0; k < std::min(b0.size(), b1.size()); ++k)
        backward.push_back(b0[k].begin - b1[k].end);
    }
  return {median(forward), median(backward)};
}

std::string hop_job(std::size_t stages) {
  return "[cluster]\nname = \"cpu-8\"\nnetwork = { bandwidth = \"10 GB/s\", latency = \"1 us\" }\n"
         "[[cluster.servers]]\nname = \"local\"\n"
         "pcie = { devices_per_switch = 8, switch_bandwidth = \"10 GB/s\", inter_bridge_bandwidth = \"10 GB/s\" }\n"
         "nic = { count = 1, bandwidth = \"10 GB/s\" }\n"
         "devices = [{ kind = \"cpu\", count = 8, speed = 1.0, memory = \"1 GiB\" }]\n"
         "[job]\nname = \"hops\"\n"
         "[model]\nzoo = \"mlp\"\nlayers = 7\nwidth = 4\n"
         "[data]\ndataset = \"synthetic\"\nsamples = 4096\nshape = [4]\nclasses = 2\n"
         "[train]\nbatch_size = 4\noptimizer = \"sgd\"\nlr = 0.01\n"
         "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"gpipe\"\n"
         "stages = " +
         std::to_string(stages) + "\npipelines = 1\nmicro_batches = 1\n";
}

} // namespace actorpipe::bench
