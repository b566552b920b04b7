/// timeline_from_trace(): the tracks and spans of a Chrome trace as timeline rows and boxes.

#include "trace_timeline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace actorpipe::plot {

namespace {

using json = nlohmann::json;

struct Span {
  std::pair<std::uint64_t, std::uint64_t> track; ///< pid, tid
  double start_us = 0, duration_us = 0;
  std::string name, kind;
  std::optional<std::uint64_t> step;
};

/// "forward 3" → "3": the micro-batch a span names, shown in its box.
std::string box_label(const std::string& name) {
  const auto space = name.rfind(' ');
  return space == std::string::npos ? std::string() : name.substr(space + 1);
}

} // namespace

Result<Timeline> timeline_from_trace(const std::string& text, const std::string& source,
                                     const TimelineOptions& options) {
  const json trace = json::parse(text, nullptr, false);
  const json* events = &trace;
  if (trace.is_object() && trace.contains("traceEvents")) events = &trace["traceEvents"];
  if (!events->is_array()) return Error::bad_input(source + ": not a trace (no list of trace events)");

  std::map<std::uint64_t, std::string> processes;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> threads;
  std::vector<Span> spans;
  std::optional<std::uint64_t> last_step;
  for (const json& e : *events) {
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) continue;
    const std::string ph = e["ph"];
    const auto pid = e.value("pid", std::uint64_t{0});
    const auto tid = e.value("tid", std::uint64_t{0});
    if (ph == "M" && e.contains("args") && e["args"].is_object() && e["args"].contains("name")) {
      const std::string name = e["args"]["name"].is_string() ? e["args"]["name"].get<std::string>() : "";
      if (e.value("name", "") == "process_name") processes[pid] = name;
      if (e.value("name", "") == "thread_name") threads[{pid, tid}] = name;
    } else if (ph == "X") {
      if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number())
        return Error::bad_input(source + ": a span without a number for ts or dur: " + e.dump().substr(0, 200));
      Span s{{pid, tid}, e["ts"].get<double>(), e["dur"].get<double>(), e.value("name", ""), e.value("cat", ""), {}};
      if (e.contains("args") && e["args"].is_object() && e["args"].contains("step") &&
          e["args"]["step"].is_number_unsigned()) {
        s.step = e["args"]["step"].get<std::uint64_t>();
        last_step = std::max(last_step.value_or(0), *s.step);
      }
      spans.push_back(std::move(s));
    }
  }
  const std::uint64_t first = options.first_step.value_or(options.last_step.value_or(last_step.value_or(0)));
  const std::uint64_t last = options.last_step.value_or(options.first_step ? first : last_step.value_or(0));
  if (first > last)
    return Error::bad_input("the first step to show (" + std::to_string(first) + ") is after the last (" +
                            std::to_string(last) + ")");
  // A track with spans of the steps shown keeps those. A track without (a pipeline of
  // an asynchronous run that was at other steps meanwhile) keeps what it did while
  // the others ran them: every pipeline, by time.
  std::set<std::pair<std::uint64_t, std::uint64_t>> in_steps;
  double window_start = std::numeric_limits<double>::infinity(), window_end = -window_start;
  for (const Span& s : spans)
    if (s.step && *s.step >= first && *s.step <= last) {
      in_steps.insert(s.track);
      window_start = std::min(window_start, s.start_us);
      window_end = std::max(window_end, s.start_us + s.duration_us);
    }
  std::erase_if(spans, [&](const Span& s) {
    if (!s.step) return false;
    if (in_steps.contains(s.track)) return *s.step < first || *s.step > last;
    return s.start_us + s.duration_us <= window_start || s.start_us >= window_end;
  });
  if (spans.empty())
    return Error::bad_input(source + ": no spans" +
                            (last_step ? " in steps " + std::to_string(first) + " to " + std::to_string(last) +
                                             " (the trace has steps up to " + std::to_string(*last_step) + ")"
                                       : std::string()));

  Timeline timeline;
  timeline.title = options.title;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> rows;
  for (const Span& s : spans)
    rows.emplace(s.track, 0);
  for (auto& [track, row] : rows) {
    row = timeline.rows.size();
    const auto process = processes.find(track.first);
    const auto thread = threads.find(track);
    std::string name = process != processes.end() ? process->second : "process " + std::to_string(track.first);
    name += ", " + (thread != threads.end() ? thread->second : "thread " + std::to_string(track.second));
    timeline.rows.push_back(std::move(name));
  }
  // Kinds in the order a step runs them, then any other.
  std::vector<std::string> order{"forward", "backward", "input gradient", "weight gradient",
                                 "send",    "wait",     "sync",           "step"};
  double start = std::numeric_limits<double>::infinity();
  for (const Span& s : spans) {
    start = std::min(start, s.start_us);
    if (std::find(order.begin(), order.end(), s.kind) == order.end()) order.push_back(s.kind);
  }
  std::vector<std::size_t> kind_index(order.size(), std::numeric_limits<std::size_t>::max());
  for (const Span& s : spans) {
    const auto k = static_cast<std::size_t>(std::find(order.begin(), order.end(), s.kind) - order.begin());
    if (kind_index[k] == std::numeric_limits<std::size_t>::max()) kind_index[k] = 0;
  }
  for (std::size_t k = 0; k < order.size(); ++k)
    if (kind_index[k] == 0) {
      kind_index[k] = timeline.kinds.size();
      timeline.kinds.push_back(order[k]);
      timeline.muted.push_back(order[k] == "wait"); // a stage idle until its input arrives
    }
  for (const Span& s : spans) {
    const auto k = static_cast<std::size_t>(std::find(order.begin(), order.end(), s.kind) - order.begin());
    timeline.boxes.push_back({rows[s.track], (s.start_us - start) / 1000.0,
                              (s.start_us + s.duration_us - start) / 1000.0, kind_index[k], box_label(s.name)});
  }
  // Where each row begins each step after its first shown: asynchronous pipelines
  // begin theirs at their own times. A step begins with computing: a simulation's rows
  // of only sends or syncs (its stages' other threads) begin none.
  const auto computes = [](const std::string& kind) {
    return kind == "forward" || kind == "backward" || kind == "input gradient" || kind == "weight gradient";
  };
  std::map<std::size_t, std::map<std::uint64_t, double>> step_starts;
  for (const Span& s : spans)
    if (s.step && computes(s.kind)) {
      auto& starts = step_starts[rows[s.track]];
      const auto [at, fresh] = starts.emplace(*s.step, s.start_us);
      if (!fresh) at->second = std::min(at->second, s.start_us);
    }
  for (const auto& [row, starts] : step_starts)
    for (auto it = std::next(starts.begin()); it != starts.end(); ++it)
      timeline.marks.push_back({row, (it->second - start) / 1000.0, "step " + std::to_string(it->first)});
  if (timeline.title.empty() && last_step)
    timeline.title = first == last ? "step " + std::to_string(first)
                                   : "steps " + std::to_string(first) + " to " + std::to_string(last);
  return timeline;
}

} // namespace actorpipe::plot
