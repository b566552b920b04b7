/// Straggler specs (docs/simulate.md): "delay:p=0.05,ms=20;slow:device=fast/gpu3,factor=2,from=1s,to=3s".

#include "sim/straggled_time.hpp"

#include "base/text.hpp"
#include "base/units.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>

namespace actorpipe {

namespace {

/// The bounds of a straggler's figures: a day's delay or window edge, a thousandfold
/// slow-down. Beyond them a run or a simulation only waits, or its clock overflows.
constexpr double most_ms = 86'400'000;
constexpr double most_factor = 1000;

Result<double> number(const std::string& entry, const std::string& key, const std::string& value) {
  double out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  // from_chars reads "nan" and "inf"; no straggler is described by either.
  if (ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(out))
    return Error::bad_input("stragglers: '" + entry + "': " + key + " '" + value + "' is not a number");
  return out;
}

/// Times are written with units ("100ms", "2 s"); a bare number is milliseconds.
Result<double> milliseconds(const std::string& entry, const std::string& key, const std::string& value) {
  if (auto plain = number(entry, key, value)) return *plain;
  auto seconds = units::parse_duration(value);
  if (!seconds) return Error::bad_input("stragglers: '" + entry + "': " + key + ": " + seconds.error().message);
  return *seconds * 1000.0;
}

Result<DeviceId> device(const std::string& entry, const std::string& value, const ClusterSpec& cluster) {
  for (DeviceId d = 0; d < cluster.devices.size(); ++d)
    if (cluster.devices[d].name == value) return d;
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), index);
  if (ec == std::errc{} && end == value.data() + value.size() && index < cluster.devices.size()) return index;
  std::vector<std::string> names;
  for (const Device& d : cluster.devices)
    names.push_back(d.name);
  return Error::bad_input("stragglers: '" + entry + "': no device '" + value + "' in cluster '" + cluster.name + "'" +
                          text::did_you_mean(value, names));
}

} // namespace

Result<Stragglers> parse_stragglers(std::string_view spec, const ClusterSpec& cluster) {
  Stragglers out;
  for (const std::string& raw : text::split(spec, ';')) {
    const std::string entry(text::trim(raw));
    if (entry.empty()) continue;
    const auto colon = entry.find(':');
    const std::string kind = entry.substr(0, colon);
    if (colon == std::string::npos || (kind != "delay" && kind != "slow"))
      return Error::bad_input("stragglers: '" + entry + "': expected delay:... or slow:...");
    std::map<std::string, std::string> fields;
    for (const std::string& field : text::split(entry.substr(colon + 1), ',')) {
      const auto eq = field.find('=');
      if (eq == std::string::npos)
        return Error::bad_input("stragglers: '" + entry + "': expected key=value, found '" + field + "'");
      const std::string key(text::trim(field.substr(0, eq)));
      if (fields.count(key)) return Error::bad_input("stragglers: '" + entry + "': " + key + " given twice");
      fields[key] = std::string(text::trim(field.substr(eq + 1)));
    }
    auto take = [&](const std::string& key) -> Result<std::string> {
      const auto it = fields.find(key);
      if (it == fields.end()) return Error::bad_input("stragglers: '" + entry + "': needs " + key + "=");
      std::string value = it->second;
      fields.erase(it);
      return value;
    };
    if (kind == "delay") {
      RandomDelay delay;
      auto p = take("p");
      ACTORPIPE_TRY(p);
      auto probability = number(entry, "p", *p);
      ACTORPIPE_TRY(probability);
      if (*probability < 0 || *probability > 1)
        return Error::bad_input("stragglers: '" + entry + "': p must be in [0, 1]");
      delay.probability = *probability;
      auto ms = take("ms");
      ACTORPIPE_TRY(ms);
      auto delay_ms = milliseconds(entry, "ms", *ms);
      ACTORPIPE_TRY(delay_ms);
      if (!(*delay_ms >= 0 && *delay_ms <= most_ms))
        return Error::bad_input("stragglers: '" + entry + "': ms must be from 0 to a day (86400000)");
      delay.delay_ms = *delay_ms;
      if (fields.count("device")) {
        auto d = device(entry, *take("device"), cluster);
        ACTORPIPE_TRY(d);
        delay.device = *d;
      }
      out.delays.push_back(delay);
    } else {
      SlowWindow window;
      auto name = take("device");
      ACTORPIPE_TRY(name);
      auto d = device(entry, *name, cluster);
      ACTORPIPE_TRY(d);
      window.device = *d;
      auto factor_text = take("factor");
      ACTORPIPE_TRY(factor_text);
      auto factor = number(entry, "factor", *factor_text);
      ACTORPIPE_TRY(factor);
      if (!(*factor >= 1 && *factor <= most_factor))
        return Error::bad_input("stragglers: '" + entry + "': factor must be from 1 to 1000");
      window.factor = *factor;
      window.from_ms = 0;
      window.to_ms = std::numeric_limits<double>::infinity();
      if (fields.count("from")) {
        auto from = milliseconds(entry, "from", *take("from"));
        ACTORPIPE_TRY(from);
        window.from_ms = *from;
      }
      if (fields.count("to")) {
        auto to = milliseconds(entry, "to", *take("to"));
        ACTORPIPE_TRY(to);
        window.to_ms = *to;
      }
      for (const auto& [key, ms] : {std::pair{"from", window.from_ms}, std::pair{"to", window.to_ms}})
        if (!std::isinf(ms) && !(ms >= 0 && ms <= most_ms))
          return Error::bad_input("stragglers: '" + entry + "': " + key + " must be from 0 to a day");
      if (!(window.to_ms > window.from_ms))
        return Error::bad_input("stragglers: '" + entry + "': 'to' must be after 'from'");
      out.windows.push_back(window);
    }
    if (!fields.empty())
      return Error::bad_input("stragglers: '" + entry + "': unknown key '" + fields.begin()->first + "'");
  }
  return out;
}

double straggled_ms(const Stragglers& stragglers, DeviceId device, double start_ms, double ms,
                    std::mt19937_64& random) {
  for (const SlowWindow& w : stragglers.windows)
    if (w.device == device && start_ms >= w.from_ms && start_ms < w.to_ms) ms *= w.factor;
  for (const RandomDelay& d : stragglers.delays)
    if ((!d.device || *d.device == device) && std::uniform_real_distribution<double>(0, 1)(random) < d.probability)
      ms += d.delay_ms;
  return ms;
}

} // namespace actorpipe
