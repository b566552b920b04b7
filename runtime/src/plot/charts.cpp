/// Drawing charts with PLplot's SVG driver. PLplot keeps its state in globals: one chart
/// is drawn at a time, into a stream of its own that is ended before the next.

#include "charts.hpp"

#include "base/atomic_file.hpp"
#include "base/input_file.hpp"

#include <plplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <unistd.h>

namespace actorpipe::plot {

namespace {

std::mutex plplot_mutex;

/// Colour map 0: 0 the background, 1 the axes and text, 2 the grid, 3 muted boxes, then
/// the series.
constexpr int axes = 1, grid = 2, muted = 3, first_series = 4;
constexpr unsigned char palette[][3] = {{255, 255, 255}, {40, 40, 40},   {225, 225, 225}, {200, 200, 200},
                                        {31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                        {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                                        {188, 189, 34},  {23, 190, 207}};
constexpr int series_colours = static_cast<int>(std::size(palette)) - first_series;

int series_colour(std::size_t i) { return first_series + static_cast<int>(i % series_colours); }

/// Series i's line style (PLplot's 1: solid, then its dashes) and marker: together with
/// the colour they tell apart series that overlap.
PLINT line_style(std::size_t i) { return static_cast<PLINT>(1 + i % 4); }
/// PLplot's own symbols (drawn as strokes, so in every font): circle, square, triangle,
/// cross, plus, star.
PLINT marker(std::size_t i) {
  constexpr PLINT markers[] = {4, 6, 7, 5, 2, 3};
  return markers[i % std::size(markers)];
}
/// A series of more points than this is drawn as a line alone (as is a chart's only one).
constexpr std::size_t max_marked_points = 40;

/// PLplot ends the program on an error it deems fatal; this says why first, in
/// actorpipe's words (the only one expected is a missing SVG driver).
int on_fatal(const char* message) {
  std::fprintf(stderr, "actorpipe: drawing a chart failed in PLplot: %s\n", message);
  return 1;
}

/// Draws with `draw` into an SVG file at `path`, atomically: into a temporary file
/// beside it that is renamed when PLplot is done.
template <class Draw> Status draw_svg(const std::string& path, int width, int height, Draw draw) {
  std::lock_guard lock(plplot_mutex);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  PLINT stream = 0;
  plmkstrm(&stream);
  if (stream < 0) return Error::run_failed(path + ": PLplot has no stream left to draw in");
  plsexit(on_fatal);
  plsdev("svg");
  plsfnam(temporary.c_str());
  plspage(0, 0, width, height, 0, 0);
  plscmap0n(static_cast<PLINT>(std::size(palette)));
  for (std::size_t i = 0; i < std::size(palette); ++i)
    plscol0(static_cast<PLINT>(i), palette[i][0], palette[i][1], palette[i][2]);
  plinit();
  pladv(0);
  draw();
  plend1();
  auto text = read_file(temporary);
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
  ACTORPIPE_TRY(text);
  return write_file_atomically(path, *text);
}

struct Range {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(double x) {
    min = std::min(min, x);
    max = std::max(max, x);
  }
  /// Widened by `margin` of its span on each side; a single value gets a span of its own.
  Range padded(double margin) const {
    const double span = max > min ? max - min : std::max(std::abs(max), 1.0);
    return {min - margin * span, max + margin * span};
  }
};

/// The frame every chart shares: a light grid, then the axes, ticks and labels over it.
void frame(const char* x_options, const char* y_options, const std::string& title, const std::string& x_label,
           const std::string& y_label, bool x_grid = true, double x_tick = 0, bool y_grid = true) {
  plcol0(grid);
  plwidth(1);
  plbox(x_grid ? "g" : "", x_tick, 0, y_grid ? "g" : "", 0, 0);
  plcol0(axes);
  plbox(x_options, x_tick, x_tick > 0 ? 1 : 0, y_options, 0, 0);
  plschr(0, 1.1);
  pllab(x_label.c_str(), y_label.c_str(), title.c_str());
  plschr(0, 0.9);
}

/// The right edge of a plot on a page `page_px` wide (as a fraction of it) that leaves
/// room beside it for a legend of `labels`, which at its text size takes about 8.6 px a
/// character and 100 px for its line sample and padding, and a margin to the page's edge.
double plot_right(const std::vector<std::string>& labels, double page_px = 960) {
  std::size_t longest = 0;
  for (const std::string& label : labels)
    longest = std::max(longest, label.size());
  const double legend_px = 100 + 8.6 * static_cast<double>(longest);
  return std::clamp((page_px - 24 - legend_px) / page_px, 0.4, 0.8);
}

/// A legend inside the top right corner of the plot, or beside it, right of the plot;
/// series i has `colours[i]`, or the i-th series colour. Its text is `text_scale` times
/// PLplot's default size (pllegend sets it, whatever plschr said).
void legend(const std::vector<std::string>& labels, bool boxes, bool beside = false,
            const std::vector<int>& given_colours = {}, double text_scale = 0.8) {
  const auto n = static_cast<PLINT>(labels.size());
  std::vector<PLINT> options(labels.size(), boxes ? PL_LEGEND_COLOR_BOX : PL_LEGEND_LINE), colours(labels.size()),
      text_colours(labels.size(), axes), patterns(labels.size(), 0), styles(labels.size()),
      symbol_numbers(labels.size(), 0);
  std::vector<PLFLT> scales(labels.size(), 0.8), widths(labels.size(), 2.5), box_widths(labels.size(), 1),
      symbol_scales(labels.size(), 0.8);
  std::vector<const char*> texts, symbols(labels.size(), "");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    colours[i] = i < given_colours.size() ? given_colours[i] : series_colour(i);
    styles[i] = line_style(i); // the legend's line as the series' own: solid or dashed
    texts.push_back(labels[i].c_str());
  }
  PLFLT width = 0, height = 0;
  const PLINT position = beside ? PL_POSITION_RIGHT | PL_POSITION_OUTSIDE // centred on the right edge
                                : PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE;
  pllegend(&width, &height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, position, beside ? 0.01 : 0.02,
           beside ? 0.0 : 0.02, beside ? 0.03 : 0.04, 0, axes, 1, 0, 0, n, options.data(), beside ? 0.6 : 1.0,
           text_scale, 2.0, 0, text_colours.data(), texts.data(), colours.data(), patterns.data(), scales.data(),
           box_widths.data(), colours.data(), styles.data(), widths.data(), colours.data(), symbol_scales.data(),
           symbol_numbers.data(), symbols.data());
}

void fill_box(double x0, double x1, double y0, double y1, int colour) {
  const PLFLT x[] = {x0, x1, x1, x0};
  const PLFLT y[] = {y0, y0, y1, y1};
  plcol0(colour);
  plfill(4, x, y);
}

/// Whether `text`, at the current character size, is narrower than `width` in world
/// coordinates along x.
bool fits(const std::string& text, double width) {
  PLFLT char_height = 0, char_width = 0;
  plgchr(&char_height, &char_width); // millimetres
  PLFLT xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  plgvpw(&xmin, &xmax, &ymin, &ymax);
  PLFLT vx0 = 0, vx1 = 0, vy0 = 0, vy1 = 0;
  plgvpd(&vx0, &vx1, &vy0, &vy1);
  PLFLT page_x0 = 0, page_x1 = 0, page_y0 = 0, page_y1 = 0;
  plgspa(&page_x0, &page_x1, &page_y0, &page_y1);
  const double mm_per_unit = (vx1 - vx0) * (page_x1 - page_x0) / (xmax - xmin);
  return width * mm_per_unit > 0.75 * char_height * static_cast<double>(text.size()) + 0.5;
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, std::abs(x) >= 100 || x == std::floor(x) ? "%.0f" : "%.3g", x);
  return text;
}

/// Labels and grid lines for a logarithmic y axis that shows fewer than two powers of
/// ten, where PLplot labels the powers alone: at 1, 2 and 5 times each power (every
/// digit where the range is narrower still) inside [min, max] (log10 values), on an x
/// range of [x0, x1].
void label_log_axis(double min, double max, double x0, double x1) {
  std::vector<double> at;
  for (const std::vector<int>& digits : {std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    at.clear();
    for (double power = std::floor(min); power <= std::ceil(max); ++power)
      for (int d : digits)
        if (const double v = power + std::log10(d); v >= min && v <= max) at.push_back(v);
    if (at.size() >= 3) break;
  }
  plcol0(grid);
  for (double v : at)
    pljoin(x0, v, x1, v);
  plcol0(axes);
  for (double v : at)
    plmtex("lv", 0.5, (v - min) / (max - min), 1.0, number(std::pow(10.0, v)).c_str());
  plbox("bc", 0, 0, "bc", 0, 0); // the frame again, over the grid lines
}

/// A tick spacing for an x axis of whole numbers over a short span, where PLplot would
/// put ticks (and labels) between them; 0 (PLplot's choice) otherwise.
double whole_number_ticks(const std::vector<const std::vector<double>*>& xs, double span) {
  for (const auto* x : xs)
    for (double v : *x)
      if (v != std::floor(v)) return 0;
  if (span > 40) return 0;
  return span <= 10 ? 1 : span <= 20 ? 2 : 5;
}

} // namespace

Status write_svg(const LineChart& chart, const std::string& path) {
  Range x, y;
  for (const Series& s : chart.series) {
    if (s.x.size() != s.y.size())
      return Error::bad_input("series '" + s.label + "': " + std::to_string(s.x.size()) + " x values and " +
                              std::to_string(s.y.size()) + " y values");
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]))
        return Error::bad_input("series '" + s.label + "': point " + std::to_string(i + 1) + " is not finite");
      if (chart.log_y && s.y[i] <= 0)
        return Error::bad_input("series '" + s.label + "': point " + std::to_string(i + 1) + " has y " +
                                number(s.y[i]) + ", which a logarithmic axis cannot show");
      x.add(s.x[i]);
      y.add(chart.log_y ? std::log10(s.y[i]) : s.y[i]);
    }
  }
  if (x.min > x.max) return Error::bad_input("a line chart needs at least one point");
  const Range xr = x.max > x.min ? x : x.padded(0.05), yr = y.padded(0.05);
  std::vector<const std::vector<double>*> xs;
  for (const Series& s : chart.series)
    xs.push_back(&s.x);
  const double x_tick = whole_number_ticks(xs, xr.max - xr.min);
  // Under two powers of ten, PLplot would label none or one: the labels are ours.
  const bool few_powers = chart.log_y && std::floor(yr.max) - std::ceil(yr.min) < 1;
  std::vector<std::string> labels;
  for (const Series& s : chart.series)
    labels.push_back(s.label);
  const bool has_legend = chart.series.size() > 1 || !labels.front().empty();
  return draw_svg(path, 960, 600, [&] {
    plvpor(0.1, has_legend ? plot_right(labels) : 0.95, 0.13, 0.92); // the legend right of it
    plwind(xr.min, xr.max, yr.min, yr.max);
    frame("bcnst",
          !chart.log_y ? "bcnstv"
          : few_powers ? "bcstlv"
                       : "bcnstlv",
          chart.title, chart.x_label, chart.y_label, true, x_tick, !few_powers);
    if (few_powers) label_log_axis(yr.min, yr.max, xr.min, xr.max);
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
      const Series& s = chart.series[i];
      std::vector<PLFLT> ys(s.y);
      if (chart.log_y)
        for (double& v : ys)
          v = std::log10(v);
      plcol0(series_colour(i));
      plwidth(2.5);
      pllsty(line_style(i));
      plline(static_cast<PLINT>(s.x.size()), s.x.data(), ys.data());
      pllsty(1);
      // Markers where the points are few enough to tell apart: lines that lie on each
      // other still show each series.
      if (chart.series.size() > 1 && s.x.size() <= max_marked_points) {
        plssym(0, 1.2);
        plpoin(static_cast<PLINT>(s.x.size()), s.x.data(), ys.data(), marker(i));
      }
    }
    plwidth(1);
    plschr(0, 0.9);
    if (has_legend) legend(labels, false, true);
  });
}

Status write_svg(const BarChart& chart, const std::string& path) {
  if (chart.categories.empty() || chart.groups.empty()) return Error::bad_input("a bar chart needs bars");
  if (chart.values.size() != chart.groups.size())
    return Error::bad_input(std::to_string(chart.groups.size()) + " groups but " + std::to_string(chart.values.size()) +
                            " rows of values");
  Range y;
  y.add(0);
  for (std::size_t g = 0; g < chart.values.size(); ++g) {
    if (chart.values[g].size() != chart.categories.size())
      return Error::bad_input("group '" + chart.groups[g] + "': " + std::to_string(chart.values[g].size()) +
                              " values for " + std::to_string(chart.categories.size()) + " categories");
    for (double v : chart.values[g]) {
      if (!std::isfinite(v)) return Error::bad_input("group '" + chart.groups[g] + "': a value is not finite");
      y.add(v);
    }
  }
  const auto categories = static_cast<double>(chart.categories.size());
  const auto groups = static_cast<double>(chart.groups.size());
  // A single unnamed group has no legend, and the plot takes its room.
  const bool has_legend = chart.groups.size() > 1 || !chart.groups.front().empty();
  const double right = has_legend ? plot_right(chart.groups) : 0.95;
  // A value wider than its bar is written up along it, above its end: the space above
  // the tallest bar then holds the longest value standing.
  constexpr double value_px_per_char = 9.0; // at the values' size
  const double bar_px = 960 * (right - 0.1) / categories * 0.8 / groups * 0.92;
  std::size_t longest_value = 0;
  for (const auto& row : chart.values)
    for (double v : row)
      longest_value = std::max(longest_value, number(v).size());
  const bool standing = static_cast<double>(longest_value) * value_px_per_char + 4 > bar_px;
  const double headroom = standing ? 0.06 + 0.022 * static_cast<double>(longest_value) : 0.12;
  const double top = y.max + headroom * (y.max - y.min), bottom = y.min < 0 ? y.min * 1.05 : 0;
  // Names wider than their category alternate between lines, as many as the longest
  // needs, so that no two on one line meet; past four they are written smaller.
  std::size_t longest = 0;
  for (const std::string& name : chart.categories)
    longest = std::max(longest, name.size());
  constexpr int page_width = 960;
  constexpr std::size_t most_lines = 4;
  constexpr double name_scale = 0.9, px_per_char = 11.5; // PLplot writes them 21 px high at this scale
  const double category_px = page_width * (right - 0.1) / categories;
  const double name_px = static_cast<double>(longest) * px_per_char + 12; // with a gap to the next
  const auto lines = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(name_px / category_px)), 1, most_lines);
  const double scale =
      std::max(0.5, std::min(name_scale, name_scale * (most_lines * category_px - 12) / (name_px - 12)));
  const double plot_bottom = 0.16 + 0.04 * static_cast<double>(lines > 2 ? lines - 2 : 0) * scale / name_scale;
  return draw_svg(path, page_width, 600, [&] {
    plvpor(0.1, right, plot_bottom, 0.92); // the legend right of it
    plwind(0, categories, bottom, top);
    // Fixed-point values: PLplot's "(x10⁴)" for large ones would sit on the title.
    frame("bc", "bcnstvf", chart.title, "", chart.y_label, false);
    const double width = 0.8 / groups;
    plschr(0, 0.7);
    for (std::size_t c = 0; c < chart.categories.size(); ++c) {
      for (std::size_t g = 0; g < chart.groups.size(); ++g) {
        const double x0 = static_cast<double>(c) + 0.1 + width * static_cast<double>(g);
        const double v = chart.values[g][c];
        fill_box(x0, x0 + width * 0.92, 0, v, series_colour(g));
        plcol0(axes);
        // The value above its bar: across it where it fits, else standing up along it.
        if (!standing)
          plptex(x0 + width * 0.46, v + (v >= 0 ? 0.02 : -0.05) * (top - bottom), 1, 0, 0.5, number(v).c_str());
        else
          plptex(x0 + width * 0.6, v + (v >= 0 ? 0.015 : -0.015) * (top - bottom), 0, v >= 0 ? 1 : -1, 0,
                 number(v).c_str());
      }
    }
    plschr(0, scale);
    plcol0(axes);
    for (std::size_t c = 0; c < chart.categories.size(); ++c)
      plmtex("b", 1.5 + 1.2 * static_cast<double>(c % lines), (static_cast<double>(c) + 0.5) / categories, 0.5,
             chart.categories[c].c_str());
    plschr(0, name_scale);
    plmtex("b", (0.3 + 1.2 * static_cast<double>(lines)) * scale / name_scale + 1.7, 0.5, 0.5, chart.x_label.c_str());
    if (has_legend) legend(chart.groups, true, true);
  });
}

Status write_svg(const Timeline& timeline, const std::string& path) {
  if (timeline.rows.empty() || timeline.boxes.empty()) return Error::bad_input("a timeline needs boxes");
  double end = 0;
  for (const TimelineBox& b : timeline.boxes) {
    if (b.row >= timeline.rows.size() || b.kind >= timeline.kinds.size() || !(b.end_ms >= b.start_ms))
      return Error::bad_input("a timeline box outside its rows or kinds, or ending before it starts");
    end = std::max(end, b.end_ms);
  }
  std::vector<int> colours;
  for (std::size_t k = 0, work = 0; k < timeline.kinds.size(); ++k)
    colours.push_back(k < timeline.muted.size() && timeline.muted[k] ? muted : series_colour(work++));
  const auto rows = static_cast<double>(timeline.rows.size());
  // Rows of 56 px, down to 18 px for many stages, so that a 96-stage pipeline stays a
  // page one can scroll; its labels keep their size.
  const int row_px = std::clamp(56 - static_cast<int>(timeline.rows.size()), 18, 56);
  const int height = 200 + row_px * static_cast<int>(timeline.rows.size());
  const double pixel = 1.0 / height; // of the page's height
  // PLplot sizes text by the page's height: on a page taller than eight rows' (648 px)
  // every size is scaled back to that page's.
  const double text = std::min(1.0, 648.0 / height);
  // The row labels' width: as the longest needs (about 11.5 px a character).
  std::size_t longest = 0;
  for (const std::string& row : timeline.rows)
    longest = std::max(longest, row.size());
  const double label_fraction = std::clamp((30 + 11.5 * static_cast<double>(longest)) / 1400, 0.08, 0.4);
  return draw_svg(path, 1400, height, [&] {
    plvpor(label_fraction, 0.85, 90 * pixel, 1 - 70 * pixel); // the legend right of it
    plsmaj(0, text);                                          // tick lengths too are the page's height's
    plsmin(0, text);
    plwind(0, end * 1.02, rows, 0); // row 0 at the top
    plcol0(grid);
    plbox("g", 0, 0, "", 0, 0);
    plschr(0, 0.6 * text);
    // Muted boxes first, so that work drawn over them stays in view.
    for (const bool muted_pass : {true, false})
      for (const TimelineBox& b : timeline.boxes) {
        if ((colours[b.kind] == muted) != muted_pass) continue;
        fill_box(b.start_ms, b.end_ms, static_cast<double>(b.row) + 0.15, static_cast<double>(b.row) + 0.85,
                 colours[b.kind]);
        if (!muted_pass && !b.label.empty() && fits(b.label, b.end_ms - b.start_ms)) {
          plcol0(0);
          plptex((b.start_ms + b.end_ms) / 2, static_cast<double>(b.row) + 0.62, 1, 0, 0.5, b.label.c_str());
        }
      }
    // Step boundaries: a dark line across the row where it begins a step.
    plcol0(axes);
    plwidth(2);
    plschr(0, 0.5 * text);
    for (const TimelineMark& m : timeline.marks) {
      pljoin(m.at_ms, static_cast<double>(m.row) + 0.02, m.at_ms, static_cast<double>(m.row) + 0.98);
      plptex(m.at_ms, static_cast<double>(m.row) + 0.12, 1, 0, -0.05, m.label.c_str());
    }
    plwidth(1);
    plschr(0, 0.9 * text);
    plcol0(axes);
    plbox("bcnst", 0, 0, "bc", 0, 0);
    plschr(0, 0.75 * text);
    for (std::size_t r = 0; r < timeline.rows.size(); ++r)
      plmtex("lv", 0.8, 1 - (static_cast<double>(r) + 0.5) / rows, 1.0, timeline.rows[r].c_str()); // from the bottom
    plschr(0, 0.9 * text);
    plmtex("b", 3.4, 0.5, 0.5, "time (ms)");
    plschr(0, 1.1 * text);
    plmtex("t", 1.5, 0.0, 0.0, timeline.title.c_str());
    legend(timeline.kinds, true, true, colours, 0.8 * text); // pllegend sets its text's size itself
  });
}

} // namespace actorpipe::plot
