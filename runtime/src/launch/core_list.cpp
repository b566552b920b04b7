/// Core lists: read, written back, and shared out evenly.

#include "launch/core_list.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

namespace actorpipe::launch {

namespace {

/// A core's number: digits only, below core_limit.
std::optional<int> core_number(std::string_view text) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0 || value >= core_limit)
    return std::nullopt;
  return value;
}

} // namespace

Result<std::vector<int>> parse_core_list(std::string_view text, std::string_view what) {
  const auto refuse = [&](const std::string& why) {
    return Error::bad_input(std::string(what) + " '" + std::string(text) + "': " + why);
  };
  std::vector<int> cores;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view part = text.substr(at, comma - at);
    const std::size_t dash = part.find('-');
    const auto first = core_number(part.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : core_number(part.substr(dash + 1));
    if (!first || !last)
      return refuse("'" + std::string(part) + "' is not a core or a range of cores (such as 0-3,8; each below " +
                    std::to_string(core_limit) + ")");
    if (*last < *first) return refuse("the range '" + std::string(part) + "' runs backwards");
    for (int c = *first; c <= *last; ++c)
      cores.push_back(c);
    at = comma + 1;
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

std::string core_list_text(const std::vector<int>& cores) {
  std::string text;
  for (std::size_t i = 0; i < cores.size();) {
    std::size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1)
      ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(cores[i]);
    if (j > i) text += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> even_share(const std::vector<int>& cores, std::size_t k, std::size_t shares) {
  if (cores.empty() || shares == 0) return {};
  const std::size_t n = cores.size();
  if (shares > n) return {cores[k * n / shares]};
  const std::size_t first = k * n / shares, end = (k + 1) * n / shares;
  return std::vector<int>(cores.begin() + static_cast<std::ptrdiff_t>(first),
                          cores.begin() + static_cast<std::ptrdiff_t>(end));
}

} // namespace actorpipe::launch
