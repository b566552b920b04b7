#pragma once

/// A pipeline timeline from a trace in the Chrome trace event format, as `actorpipe
/// run` (trace.json) and `actorpipe simulate --trace` write it: a row per track
/// (pipeline × stage), a box per span of the chosen steps.

#include "plot/charts.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace actorpipe::plot {

struct TimelineOptions {
  /// The steps to show, inclusive; unset: the trace's last step. Spans without a step
  /// (a simulation's) are shown whatever the steps.
  std::optional<std::uint64_t> first_step, last_step;
  std::string title;
};

/// `text` is the trace, `source` its file for messages.
Result<Timeline> timeline_from_trace(const std::string& text, const std::string& source,
                                     const TimelineOptions& options);

} // namespace actorpipe::plot
