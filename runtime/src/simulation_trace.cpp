/// trace_json(): a simulated run in the Chrome trace event format, which Perfetto and
/// chrome://tracing open. Written by hand rather than as a JSON tree, because a large
/// cluster's trace holds millions of spans.

#include <actorpipe/simulator.hpp>

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

namespace actorpipe {

namespace {

const char* kind_name(int kind) { return kind == 0 ? "compute" : kind == 1 ? "send" : "sync"; }

} // namespace

std::string trace_json(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster) {
  using json = nlohmann::json;
  std::ostringstream out;
  out.precision(12);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto comma = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  std::set<std::pair<std::size_t, std::size_t>> threads;
  for (const Span& span : report.spans) threads.insert({span.pipeline, span.track * 3 + static_cast<std::size_t>(span.kind)});
  std::set<std::size_t> processes;
  for (const auto& [pipeline, thread] : threads) {
    if (processes.insert(pipeline).second) {
      comma();
      out << R"({"name":"process_name","ph":"M","pid":)" << pipeline << R"(,"args":{"name":"pipeline )" << pipeline << "\"}}";
    }
    const std::size_t stage = thread / 3;
    const std::string name = "stage " + std::to_string(stage) + " " + kind_name(static_cast<int>(thread % 3)) + " (" +
                             cluster.devices[plan.devices[pipeline][stage]].name + ")";
    comma();
    out << R"({"name":"thread_name","ph":"M","pid":)" << pipeline << ",\"tid\":" << thread
        << R"(,"args":{"name":)" << json(name).dump() << "}}";
    comma();
    out << R"({"name":"thread_sort_index","ph":"M","pid":)" << pipeline << ",\"tid\":" << thread
        << R"(,"args":{"sort_index":)" << thread << "}}";
  }
  for (const Span& span : report.spans) {
    comma();
    out << "{\"name\":" << json(span.name).dump() << ",\"cat\":\"" << kind_name(span.kind) << "\",\"ph\":\"X\",\"pid\":"
        << span.pipeline << ",\"tid\":" << span.track * 3 + static_cast<std::size_t>(span.kind)
        << ",\"ts\":" << span.start_ms * 1000.0 << ",\"dur\":" << span.duration_ms * 1000.0 << "}";
  }
  out << "\n]}\n";
  return out.str();
}

} // namespace actorpipe
