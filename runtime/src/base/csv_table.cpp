#include "base/csv_table.hpp"

namespace actorpipe {

std::string csv_field(const nlohmann::json& value) {
  if (value.is_null()) return "";
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_table(const std::vector<std::string>& columns, const std::vector<nlohmann::json>& rows) {
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c)
    out += (c ? "," : "") + csv_field(columns[c]);
  out += "\n";
  for (const nlohmann::json& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ",";
      if (const auto it = row.find(columns[c]); it != row.end()) out += csv_field(*it);
    }
    out += "\n";
  }
  return out;
}

} // namespace actorpipe
