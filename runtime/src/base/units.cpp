#include "base/units.hpp"

#include "base/text.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace actorpipe::units {

namespace {

struct Unit {
  std::string_view name;
  double factor;
};

/// Splits "12.5 GiB" into 12.5 and "GiB".
Result<std::pair<double, std::string_view>> split_quantity(std::string_view text) {
  text = text::trim(text);
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || !std::isfinite(number))
    return Error::bad_input("'" + std::string(text) + "' does not start with a number");
  if (number < 0) return Error::bad_input("'" + std::string(text) + "' is negative");
  return std::pair{number, text::trim(std::string_view(end, text.data() + text.size() - end))};
}

template <std::size_t N>
Result<double> scale(std::string_view text, const std::array<Unit, N>& table, std::string_view what) {
  auto parts = split_quantity(text);
  ACTORPIPE_TRY(parts);
  const auto [number, unit] = *parts;
  for (const auto& u : table)
    if (u.name == unit) return number * u.factor;
  std::string known;
  for (const auto& u : table)
    if (!u.name.empty()) known += (known.empty() ? "" : ", ") + std::string(u.name);
  return Error::bad_input("'" + std::string(text) + "': unknown " + std::string(what) + " unit '" + std::string(unit) +
                          "' (use " + known + ")");
}

constexpr std::array<Unit, 11> byte_units{{
    {"", 1},
    {"B", 1},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1048576.0},
    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
    {"PiB", 1125899906842624.0},
}};

constexpr std::array<Unit, 15> bandwidth_units{{
    {"", 1},
    {"B/s", 1},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"GiB/s", 1073741824.0},
    {"MiB/s", 1048576.0},
    {"bit/s", 0.125},
    {"Kb/s", 125.0},
    {"Mb/s", 125e3},
    {"Gb/s", 125e6},
    {"Mbit/s", 125e3},
    {"Gbit/s", 125e6},
    {"Tb/s", 125e9},
}};

constexpr std::array<Unit, 6> duration_units{{
    {"", 1},
    {"s", 1},
    {"ms", 1e-3},
    {"us", 1e-6},
    {"µs", 1e-6},
    {"ns", 1e-9},
}};

} // namespace

Result<std::uint64_t> parse_bytes(std::string_view text) {
  auto value = scale(text, byte_units, "size");
  ACTORPIPE_TRY(value);
  if (*value >= max_bytes) return Error::bad_input("'" + std::string(text) + "' is too large");
  return static_cast<std::uint64_t>(std::llround(*value));
}

Result<double> parse_bandwidth(std::string_view text) {
  if (text::trim(text) == "unlimited") return std::numeric_limits<double>::infinity();
  return scale(text, bandwidth_units, "bandwidth");
}

Result<double> parse_duration(std::string_view text) { return scale(text, duration_units, "time"); }

} // namespace actorpipe::units
