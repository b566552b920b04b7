/// trace_json(): a simulated run as a Chrome trace (one track per stage and kind).

#include <actorpipe/simulator.hpp>

#include "base/chrome_trace.hpp"

#include <set>

namespace actorpipe {

namespace {

constexpr std::size_t kinds = 3;

const char* kind_name(Span::Kind kind) {
  switch (kind) {
  case Span::Kind::compute: return "compute";
  case Span::Kind::send: return "send";
  case Span::Kind::sync: return "sync";
  }
  return "?";
}

/// The trace thread of a stage's spans of one kind.
std::size_t thread_of(const Span& span) { return span.track * kinds + static_cast<std::size_t>(span.kind); }

} // namespace

std::string trace_json(const SimulationReport& report, const Plan& plan, const ClusterSpec& cluster) {
  ChromeTrace trace;
  std::set<std::pair<std::size_t, std::size_t>> threads;
  for (const Span& span : report.spans)
    threads.insert({span.pipeline, thread_of(span)});
  std::set<std::size_t> processes;
  for (const auto& [pipeline, thread] : threads) {
    if (processes.insert(pipeline).second) trace.process(pipeline, "pipeline " + std::to_string(pipeline));
    const std::size_t stage = thread / kinds;
    trace.thread(pipeline, thread,
                 "stage " + std::to_string(stage) + " " + kind_name(static_cast<Span::Kind>(thread % kinds)) + " (" +
                     cluster.devices[plan.devices[pipeline][stage]].name + ")");
  }
  for (const Span& span : report.spans)
    trace.span(span.pipeline, thread_of(span), span.name, kind_name(span.kind), span.start_ms * 1000.0,
               span.duration_ms * 1000.0);
  return trace.finish();
}

} // namespace actorpipe
