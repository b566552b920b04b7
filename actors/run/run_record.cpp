/// A run's trace and the metrics a resume keeps (run_record.hpp).

#include "run/run_record.hpp"

#include "base/chrome_trace.hpp"
#include "base/input_file.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>

namespace actorpipe::actors {

std::string trace_of(const std::vector<StageTrace>& traces, const Plan& plan, const ClusterSpec& cluster,
                     double time_scale, const std::vector<std::vector<std::uint64_t>>* placement,
                     const std::vector<StepCounters>& counters) {
  ChromeTrace trace;
  const std::size_t S = plan.stages.size();
  const auto process = [&](std::size_t p, std::size_t s) { return placement ? (*placement)[p][s] : p; };
  const auto thread = [&](std::size_t p, std::size_t s) { return placement ? p * S + s : s; };
  if (placement) {
    std::set<std::uint64_t> ranks;
    for (const auto& pipeline : *placement)
      ranks.insert(pipeline.begin(), pipeline.end());
    for (const std::uint64_t rank : ranks)
      trace.process(rank, "worker process " + std::to_string(rank));
  } else {
    for (std::size_t p = 0; p < plan.pipelines; ++p)
      trace.process(p, "pipeline " + std::to_string(p));
  }
  for (const auto& t : traces) {
    const DeviceId device = plan.devices[t.pipeline][t.stage];
    const std::size_t pid = process(t.pipeline, t.stage), tid = thread(t.pipeline, t.stage);
    trace.thread(pid, tid,
                 (placement ? "pipeline " + std::to_string(t.pipeline) + ", " : std::string()) + "stage " +
                     std::to_string(t.stage) + " (" + cluster.devices[device].name + ")");
    for (const auto& span : t.spans) {
      // Sync, the optimizer step and stuck work are the whole step's, not a micro-batch's.
      const bool whole_step =
          span.kind == SpanKind::sync || span.kind == SpanKind::step || span.kind == SpanKind::stuck;
      const char* kind = to_string(span.kind);
      trace.span(pid, tid, std::string(kind) + (whole_step ? "" : " " + std::to_string(span.micro_batch)), kind,
                 span.start_us * time_scale, span.duration_us * time_scale, span.step,
                 span.cpu_us < 0 ? std::nullopt : std::optional<double>(span.cpu_us * time_scale));
    }
  }
  if (!counters.empty()) {
    // Beyond every pipeline's and worker's number, so that it sorts last.
    const std::size_t pid = std::max<std::size_t>(plan.pipelines, placement ? plan.pipelines * S : 0) + 1;
    trace.process(pid, "training");
    for (const StepCounters& c : counters) {
      trace.counter(pid, "loss", c.at_us * time_scale, c.loss);
      trace.counter(pid, "samples/s", c.at_us * time_scale, c.samples_per_s);
      trace.counter(pid, "memory (bytes)", c.at_us * time_scale, c.memory_bytes);
    }
  }
  return trace.finish();
}

std::vector<StageTrace> traces_of_stuck_run(const std::vector<StageTrace>& traces,
                                            const std::deque<StageActivity>& activities, Clock::time_point origin,
                                            Clock::time_point now, std::chrono::milliseconds limit) {
  std::vector<StageTrace> copies(traces.begin(), traces.end()); // each under its record's lock
  for (std::size_t i = 0; i < copies.size() && i < activities.size(); ++i) {
    const StageActivity& activity = activities[i];
    const std::int64_t since = activity.busy_since_ns.load(std::memory_order_acquire);
    const Clock::time_point began{Clock::duration(since)};
    if (since == 0 || now - began < limit) continue;
    copies[i].spans.push_back({SpanKind::stuck, activity.step.load(std::memory_order_relaxed), 0,
                               microseconds_since(origin, began), microseconds_since(began, now)});
  }
  return copies;
}

std::string metrics_up_to(const std::string& path, std::uint64_t step) {
  auto content = read_file(path);
  if (!content) return {};
  std::string kept;
  std::size_t at = 0;
  for (std::size_t end; (end = content->find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = content->substr(at, end - at);
    const nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("step") && entry["step"].is_number_unsigned() &&
        entry["step"].get<std::uint64_t>() <= step)
      kept += line + "\n";
  }
  return kept;
}

} // namespace actorpipe::actors
