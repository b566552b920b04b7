/// The module's plot functions: plot_lines, plot_bars and plot_timeline, drawing SVG
/// files into the script's output folder (plot/charts.hpp).

#include "script/script_module.hpp"

#include "base/input_file.hpp"
#include "base/output_folder.hpp"
#include "lua/lua_values.hpp"
#include "plot/charts.hpp"
#include "plot/trace_timeline.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace actorpipe::lua {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// The chart's file (argument 1) in the output folder, `.svg` added where its name lacks it.
Result<std::string> svg_file(lua_State* L, const char* function) {
  ACTORPIPE_TRY(expect_type(L, 1, LUA_TSTRING, (std::string(function) + ": the file name").c_str()));
  std::string name = lua_tostring(L, 1);
  if (!name.ends_with(".svg")) name += ".svg";
  return output_file(L, name);
}

/// The chart table (argument 2) as JSON, its keys checked against `known`.
Result<json> chart_spec(lua_State* L, const char* function, std::initializer_list<const char*> known) {
  ACTORPIPE_TRY(expect_type(L, 2, LUA_TTABLE, (std::string(function) + ": the chart").c_str()));
  ACTORPIPE_TRY(check_keys(L, 2, function, known));
  return to_json(L, 2, "chart");
}

Result<std::string> text_field(const json& spec, const char* key) {
  if (!spec.contains(key)) return std::string();
  if (!spec[key].is_string()) return Error::bad_input(std::string("chart.") + key + ": expected a string");
  return spec[key].get<std::string>();
}

Result<std::vector<double>> numbers(const json& list, const std::string& where) {
  if (!list.is_array()) return Error::bad_input(where + ": expected a list of numbers");
  std::vector<double> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number())
      return Error::bad_input(where + "[" + std::to_string(i + 1) + "]: expected a number, found " + list[i].dump());
    out.push_back(list[i].get<double>());
  }
  return out;
}

Result<std::vector<std::string>> strings(const json& list, const std::string& where) {
  if (!list.is_array()) return Error::bad_input(where + ": expected a list of strings");
  std::vector<std::string> out;
  for (const json& item : list)
    out.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  return out;
}

/// plot_lines(name, {title, x_label, y_label, log_y, series = {{label, x, y}, ...}}):
/// a series without x is drawn against 1, 2, 3, …
Result<int> plot_lines_fn(lua_State* L) {
  auto path = svg_file(L, "plot_lines");
  ACTORPIPE_TRY(path);
  auto spec = chart_spec(L, "plot_lines", {"title", "x_label", "y_label", "log_y", "series"});
  ACTORPIPE_TRY(spec);
  plot::LineChart chart;
  for (auto [key, field] :
       {std::pair{"title", &chart.title}, std::pair{"x_label", &chart.x_label}, std::pair{"y_label", &chart.y_label}}) {
    auto text = text_field(*spec, key);
    ACTORPIPE_TRY(text);
    *field = std::move(*text);
  }
  chart.log_y = spec->value("log_y", false);
  if (!spec->contains("series") || !(*spec)["series"].is_array() || (*spec)["series"].empty())
    return Error::bad_input("plot_lines: chart.series: expected a list of {label = ..., x = {...}, y = {...}}");
  const json& list = (*spec)["series"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "chart.series[" + std::to_string(i + 1) + "]";
    const json& s = list[i];
    if (!s.is_object() || !s.contains("y"))
      return Error::bad_input(where + ": expected {label = ..., x = ..., y = ...}");
    plot::Series series;
    series.label = s.value("label", "");
    auto y = numbers(s["y"], where + ".y");
    ACTORPIPE_TRY(y);
    series.y = std::move(*y);
    if (s.contains("x")) {
      auto x = numbers(s["x"], where + ".x");
      ACTORPIPE_TRY(x);
      series.x = std::move(*x);
    } else {
      for (std::size_t k = 0; k < series.y.size(); ++k)
        series.x.push_back(static_cast<double>(k + 1));
    }
    chart.series.push_back(std::move(series));
  }
  ACTORPIPE_TRY(plot::write_svg(chart, *path));
  lua_pushstring(L, path->c_str());
  return 1;
}

/// plot_bars(name, {title, x_label, y_label, categories = {...}, groups = {{label,
/// values}, ...}}), or values = {...} for a single group.
Result<int> plot_bars_fn(lua_State* L) {
  auto path = svg_file(L, "plot_bars");
  ACTORPIPE_TRY(path);
  auto spec = chart_spec(L, "plot_bars", {"title", "x_label", "y_label", "categories", "groups", "values"});
  ACTORPIPE_TRY(spec);
  plot::BarChart chart;
  for (auto [key, field] :
       {std::pair{"title", &chart.title}, std::pair{"x_label", &chart.x_label}, std::pair{"y_label", &chart.y_label}}) {
    auto text = text_field(*spec, key);
    ACTORPIPE_TRY(text);
    *field = std::move(*text);
  }
  if (!spec->contains("categories")) return Error::bad_input("plot_bars: chart.categories: a list of names is needed");
  auto categories = strings((*spec)["categories"], "chart.categories");
  ACTORPIPE_TRY(categories);
  chart.categories = std::move(*categories);
  if (spec->contains("values") == spec->contains("groups"))
    return Error::bad_input("plot_bars: give chart.values (one group) or chart.groups, one of them");
  if (spec->contains("values")) {
    auto values = numbers((*spec)["values"], "chart.values");
    ACTORPIPE_TRY(values);
    chart.groups.emplace_back();
    chart.values.push_back(std::move(*values));
  } else {
    const json& groups = (*spec)["groups"];
    if (!groups.is_array()) return Error::bad_input("plot_bars: chart.groups: expected a list of {label, values}");
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::string where = "chart.groups[" + std::to_string(g + 1) + "]";
      if (!groups[g].is_object() || !groups[g].contains("values"))
        return Error::bad_input(where + ": expected {label = ..., values = {...}}");
      chart.groups.push_back(groups[g].value("label", ""));
      auto values = numbers(groups[g]["values"], where + ".values");
      ACTORPIPE_TRY(values);
      chart.values.push_back(std::move(*values));
    }
  }
  ACTORPIPE_TRY(plot::write_svg(chart, *path));
  lua_pushstring(L, path->c_str());
  return 1;
}

/// plot_timeline(name, trace [, {first_step, last_step, title}]): trace is a run's
/// folder or trace file; by default its last step is drawn.
Result<int> plot_timeline_fn(lua_State* L) {
  auto path = svg_file(L, "plot_timeline");
  ACTORPIPE_TRY(path);
  auto trace = readable_file(L, 2, "plot_timeline", "trace.json");
  ACTORPIPE_TRY(trace);
  ACTORPIPE_TRY(check_keys(L, 3, "plot_timeline", {"first_step", "last_step", "title"}));
  plot::TimelineOptions options;
  if (!lua_isnoneornil(L, 3)) {
    auto spec = to_json(L, 3, "options");
    ACTORPIPE_TRY(spec);
    for (auto [key, field] :
         {std::pair{"first_step", &options.first_step}, std::pair{"last_step", &options.last_step}}) {
      if (!spec->contains(key)) continue;
      if (!(*spec)[key].is_number_integer() || (*spec)[key].get<std::int64_t>() < 1)
        return Error::bad_input(std::string("plot_timeline: ") + key + ": expected a step number ≥ 1");
      *field = (*spec)[key].get<std::uint64_t>();
    }
    options.title = spec->value("title", "");
  }
  auto text = read_file(*trace);
  ACTORPIPE_TRY(text);
  auto timeline = plot::timeline_from_trace(*text, *trace, options);
  ACTORPIPE_TRY(timeline);
  ACTORPIPE_TRY(plot::write_svg(*timeline, *path));
  lua_pushstring(L, path->c_str());
  return 1;
}

} // namespace

void add_plot_functions(lua_State* L, int module) {
  set_functions(L, module,
                {{"plot_lines", entry<plot_lines_fn>},
                 {"plot_bars", entry<plot_bars_fn>},
                 {"plot_timeline", entry<plot_timeline_fn>}});
}

} // namespace actorpipe::lua
