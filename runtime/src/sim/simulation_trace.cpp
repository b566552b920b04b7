/// trace_json(): a simulated run as a Chrome trace (one track per stage and kind), its
/// spans named as a run's are.

#include <actorpipe/simulator.hpp>

#include "base/chrome_trace.hpp"

#include <set>
#include <utility>

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

/// A span's name and category as a run's trace has them: "forward 3" (forward),
/// "backward 3", "input gradient 3", "weight gradient 3", "send 3" (send), "step", and
/// the sync's own name (sync), so that a simulation plots as a run does.
std::pair<std::string, const char*> as_run_names(const Span& span) {
  const std::string& name = span.name;
  if (span.kind == Span::Kind::sync) return {name, name == "step" ? "step" : "sync"};
  const bool send = span.kind == Span::Kind::send;
  const std::string action = send && name.starts_with("send ") ? name.substr(5) : name;
  const char* kind = nullptr;
  if (!action.empty()) {
    switch (action.front()) {
    case 'F': kind = "forward"; break;
    case 'B': kind = "backward"; break;
    case 'I': kind = "input gradient"; break;
    case 'W': kind = "weight gradient"; break;
    default: break;
    }
  }
  if (!kind) return {name, kind_name(span.kind)};
  const std::string micro_batch = action.substr(1);
  if (send) return {"send " + micro_batch, "send"};
  return {std::string(kind) + " " + micro_batch, kind};
}

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
  for (const Span& span : report.spans) {
    const auto [name, kind] = as_run_names(span);
    trace.span(span.pipeline, thread_of(span), name, kind, span.start_ms * 1000.0, span.duration_ms * 1000.0,
               span.iteration + 1);
  }
  return trace.finish();
}

} // namespace actorpipe
