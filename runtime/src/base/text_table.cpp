#include "base/text_table.hpp"

#include <algorithm>

namespace actorpipe::text {

namespace {

/// Display width of UTF-8 text: counts code points, not bytes.
std::size_t width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

} // namespace

std::string Table::str() const {
  std::vector<std::size_t> widths;
  for (const auto& column : columns_)
    widths.push_back(width(column.title));
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], width(row[c]));

  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(widths[c] - width(cell), ' ');
      if (c) out += "  ";
      out += columns_[c].align == Align::right ? pad + cell : cell + (c + 1 < columns_.size() ? pad : "");
    }
    return out + "\n";
  };
  std::vector<std::string> titles;
  for (const auto& column : columns_)
    titles.push_back(column.title);
  std::string out = line(titles);
  std::vector<std::string> rule;
  for (std::size_t w : widths)
    rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& row : rows_)
    out += line(row);
  return out;
}

} // namespace actorpipe::text
