/// trace_json(): a simulated run as a Chrome trace (one track per stage and kind).

#include <actorpipe/simulator.hpp>

#include "base/chrome_trace.hpp"

#include <set>

namespace actorpipe {

namespace {

const char* kind_name(int kind) { return kind == 0 ? "compute" : kind == 1 ? "send" : "sync"; }

} // namespace

std::string trace_json(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster) {
  ChromeTrace trace;
  std::set<std::pair<std::size_t, std::size_t>> threads;
  for (const Span& span : report.spans) threads.insert({span.pipeline, span.track * 3 + static_cast<std::size_t>(span.kind)});
  std::set<std::size_t> processes;
  for (const auto& [pipeline, thread] : threads) {
    if (processes.insert(pipeline).second) trace.process(pipeline, "pipeline " + std::to_string(pipeline));
    const std::size_t stage = thread / 3;
    trace.thread(pipeline, thread,
                 "stage " + std::to_string(stage) + " " + kind_name(static_cast<int>(thread % 3)) + " (" +
                     cluster.devices[plan.devices[pipeline][stage]].name + ")");
  }
  for (const Span& span : report.spans)
    trace.span(span.pipeline, span.track * 3 + static_cast<std::size_t>(span.kind), span.name, kind_name(span.kind),
               span.start_ms * 1000.0, span.duration_ms * 1000.0);
  return trace.finish();
}

} // namespace actorpipe
