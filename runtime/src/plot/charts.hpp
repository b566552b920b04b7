#pragma once

/// Charts a person would rather look at than read: line charts (loss against step for
/// several runs), grouped bar charts (samples/s per configuration) and pipeline
/// timelines (one row per stage actor, a box per forward and backward), drawn by PLplot
/// into SVG files.

#include <actorpipe/error.hpp>

#include <string>
#include <vector>

namespace actorpipe::plot {

struct Series {
  std::string label;
  std::vector<double> x, y;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_y = false; ///< a logarithmic y axis (every y above 0)
};

/// Bars grouped by category: values[g][c] is group g's bar in category c.
struct BarChart {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;
  std::vector<std::string> groups;
  std::vector<std::vector<double>> values;
};

/// One box of a timeline: a span of work on a row.
struct TimelineBox {
  std::size_t row = 0;
  double start_ms = 0, end_ms = 0;
  std::size_t kind = 0; ///< index into Timeline::kinds: the box's colour
  std::string label;    ///< drawn inside when it fits ("3": micro-batch 3)
};

/// Where a row begins a step: a line across the row, the step's number beside it.
struct TimelineMark {
  std::size_t row = 0;
  double at_ms = 0;
  std::string label;
};

struct Timeline {
  std::string title;
  std::vector<TimelineMark> marks;
  std::vector<std::string> rows;  ///< top to bottom
  std::vector<std::string> kinds; ///< the legend: "forward", "backward", …
  /// Kinds drawn in grey, behind the work: a stage waiting for its input, say.
  std::vector<bool> muted;
  std::vector<TimelineBox> boxes;
};

/// Each writes an SVG file atomically; a chart with nothing to draw, or values that
/// cannot be drawn (a NaN, a y ≤ 0 on a log axis), is an error saying which.
Status write_svg(const LineChart& chart, const std::string& path);
Status write_svg(const BarChart& chart, const std::string& path);
Status write_svg(const Timeline& timeline, const std::string& path);

} // namespace actorpipe::plot
