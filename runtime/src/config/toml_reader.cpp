#include "config/toml_reader.hpp"

#include "base/input_file.hpp"
#include "base/text.hpp"
#include "base/units.hpp"

#include <actorpipe/plugin.hpp>

#include <cmath>
#include <filesystem>

namespace actorpipe::config {

namespace fs = std::filesystem;

std::optional<SourcePlace> place_of(const toml::source_region& region) {
  if (!region.path) return std::nullopt; // built, not parsed: a Lua job's table
  if (region.path->starts_with("--")) return SourcePlace{*region.path};
  return SourcePlace{*region.path, region.begin.line, region.begin.column};
}

std::string where(const toml::source_region& region) {
  const auto place = place_of(region);
  return place ? place->text() : std::string("<input>");
}

Error error_at(const toml::source_region& region, std::string_view key_path, std::string_view what) {
  auto place = place_of(region);
  return place ? Error::bad_key_at(std::move(*place), std::string(key_path), std::string(what))
               : Error::bad_key(std::string(key_path), std::string(what));
}

Error error_at(const toml::node& node, std::string_view key_path, std::string_view what) {
  return error_at(node.source(), key_path, what);
}

std::string resolve_path(const toml::node& node, const std::string& path, const std::string& file) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const auto& source = node.source().path;
  const std::string& written_in = source ? *source : file;
  if (written_in.empty() || written_in.starts_with("--")) return path;
  return (fs::path(written_in).parent_path() / path).lexically_normal().string();
}

Status check_toml_depth(std::string_view text, const std::string& source) {
  enum class In { value, basic, literal, long_basic, long_literal, comment };
  In in = In::value;
  std::size_t line = 1, column = 0, depth = 0, parts = 1;
  bool header = false, line_start = true;
  const auto too_deep = [&](const char* what) {
    return Error::bad_input(source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what +
                            " deeper than " + std::to_string(max_toml_depth) + ": actorpipe reads no deeper");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    const bool starts_line = line_start && c != ' ' && c != '\t';
    if (starts_line) line_start = false;
    if (c == '\n') {
      ++line;
      column = 0;
      line_start = true;
      if (in == In::comment || in == In::basic || in == In::literal) in = In::value;
      if (in == In::value) parts = 1;
      continue;
    }
    switch (in) {
    case In::comment: continue;
    case In::basic:
      if (c == '\\')
        ++i, ++column;
      else if (c == '"')
        in = In::value;
      continue;
    case In::literal:
      if (c == '\'') in = In::value;
      continue;
    case In::long_basic:
      if (c == '\\')
        ++i, ++column;
      else if (text.substr(i, 3) == "\"\"\"")
        in = In::value, i += 2, column += 2;
      continue;
    case In::long_literal:
      if (text.substr(i, 3) == "'''") in = In::value, i += 2, column += 2;
      continue;
    case In::value: break;
    }
    switch (c) {
    case '#': in = In::comment; break;
    case '"':
      if (text.substr(i, 3) == "\"\"\"")
        in = In::long_basic, i += 2, column += 2;
      else
        in = In::basic;
      break;
    case '\'':
      if (text.substr(i, 3) == "'''")
        in = In::long_literal, i += 2, column += 2;
      else
        in = In::literal;
      break;
    case '[':
      // A table header (at a line's start, outside any value) counts its dotted parts;
      // a value's array, its nesting.
      if (starts_line && depth == 0)
        header = true, parts = 1;
      else if (!header && ++depth > max_toml_depth)
        return too_deep("arrays and inline tables nested");
      break;
    case '{':
      if (++depth > max_toml_depth) return too_deep("arrays and inline tables nested");
      parts = 1;
      break;
    case ']':
      if (header)
        header = false;
      else if (depth > 0)
        --depth;
      break;
    case '}':
      if (depth > 0) --depth;
      break;
    case ',':
    case '=': parts = 1; break;
    case '.':
      if (++parts > max_toml_depth) return too_deep("a dotted key or table name");
      break;
    default: break;
    }
  }
  return Ok{};
}

Result<toml::table> parse_toml(std::string_view text, const std::string& source) {
  // TOML++ parses nesting by recursion: a deep enough document overflows the stack.
  ACTORPIPE_TRY(check_toml_depth(text, source));
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Error::bad_input(where(e.source()) + ": " + std::string(e.description()));
  }
}

Result<toml::table> parse_toml_file(const std::string& path) {
  auto text = read_file(path);
  ACTORPIPE_TRY(text);
  return parse_toml(*text, path);
}

const char* type_name(const toml::node& node) {
  switch (node.type()) {
  case toml::node_type::string: return "a string";
  case toml::node_type::integer: return "an integer";
  case toml::node_type::floating_point: return "a number";
  case toml::node_type::boolean: return "a boolean";
  case toml::node_type::table: return "a table";
  case toml::node_type::array: return "an array";
  case toml::node_type::date:
  case toml::node_type::time:
  case toml::node_type::date_time: return "a date or time";
  default: return "nothing";
  }
}

TableReader::TableReader(const toml::table& table, std::string path, std::string file)
    : table_(table), path_(std::move(path)), file_(std::move(file)) {}

std::string TableReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const toml::node* TableReader::node(std::string_view key) {
  known_.emplace(key);
  return table_.get(key);
}

Error TableReader::wrong_type(const toml::node& node, std::string_view key, std::string_view expected) const {
  return error_at(node, key_path(key), "expected " + std::string(expected) + ", found " + type_name(node));
}

Status TableReader::string(std::string_view key, std::string& out) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  if (!n->is_string()) return wrong_type(*n, key, "a string");
  out = n->as_string()->get();
  return Ok{};
}

Status TableReader::choice(std::string_view key, std::string& out, const std::vector<std::string>& allowed) {
  std::string value = out;
  if (auto s = string(key, value); !s) return s;
  const toml::node* n = table_.get(key);
  if (!n) return Ok{};
  for (const auto& a : allowed)
    if (a == value) {
      out = value;
      return Ok{};
    }
  return error_at(*n, key_path(key),
                  "'" + value + "' is not one of " + text::join(allowed, ", ") + text::did_you_mean(value, allowed));
}

std::string TableReader::join_choices(const std::vector<std::string>& allowed) { return text::join(allowed, ", "); }

Status TableReader::boolean(std::string_view key, bool& out) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  if (!n->is_boolean()) return wrong_type(*n, key, "true or false");
  out = n->as_boolean()->get();
  return Ok{};
}

Status TableReader::integer64(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  if (!n->is_integer()) return wrong_type(*n, key, "an integer");
  const std::int64_t value = n->as_integer()->get();
  if (value < min || value > max)
    return error_at(*n, key_path(key),
                    std::to_string(value) + " is out of range [" + std::to_string(min) + ", " +
                        (max == std::numeric_limits<std::int64_t>::max() ? std::string("...") : std::to_string(max)) +
                        "]");
  out = value;
  return Ok{};
}

Status TableReader::number(std::string_view key, double& out, double min, double max) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  double value = 0;
  if (n->is_floating_point())
    value = n->as_floating_point()->get();
  else if (n->is_integer())
    value = static_cast<double>(n->as_integer()->get());
  else
    return wrong_type(*n, key, "a number");
  if (!std::isfinite(value) || value < min || value > max)
    return error_at(*n, key_path(key),
                    number_text(value) + " is out of range [" + number_text(min) + ", " +
                        (std::isinf(max) ? std::string("...") : number_text(max)) + "]");
  out = value;
  return Ok{};
}

namespace {

/// A quantity given as a plain number (in the base unit) or as text with a unit.
template <class T, class Parse>
Status quantity(TableReader& reader, std::string_view key, T& out, Parse parse, std::string_view what) {
  const toml::node* n = reader.node(key);
  if (!n) return Ok{};
  Result<T> value = Error::bad_input("");
  if (n->is_integer()) {
    if (n->as_integer()->get() < 0) return error_at(*n, reader.key_path(key), "must not be negative");
    value = static_cast<T>(n->as_integer()->get());
  } else if (n->is_floating_point()) {
    const double v = n->as_floating_point()->get();
    if (!std::isfinite(v) || v < 0) return error_at(*n, reader.key_path(key), "must be a finite, non-negative number");
    if constexpr (std::is_integral_v<T>)
      if (v >= units::max_bytes) return error_at(*n, reader.key_path(key), text::format_fixed(v, 0) + " is too large");
    value = static_cast<T>(v);
  } else if (n->is_string()) {
    value = parse(n->as_string()->get());
    if (!value) return error_at(*n, reader.key_path(key), value.error().message);
  } else {
    return error_at(*n, reader.key_path(key),
                    std::string("expected ") + std::string(what) + ", found " + type_name(*n));
  }
  out = *value;
  return Ok{};
}

} // namespace

Status TableReader::bytes(std::string_view key, std::uint64_t& out) {
  return quantity(*this, key, out, units::parse_bytes, "a size such as \"32 GiB\"");
}

Status TableReader::bandwidth(std::string_view key, double& out) {
  return quantity(*this, key, out, units::parse_bandwidth, "a bandwidth such as \"25 Gb/s\"");
}

Status TableReader::duration(std::string_view key, double& out) {
  return quantity(*this, key, out, units::parse_duration, "a time such as \"5 us\"");
}

Status TableReader::string_list(std::string_view key, std::vector<std::string>& out) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  if (n->is_string()) {
    out = {n->as_string()->get()};
    return Ok{};
  }
  if (!n->is_array()) return wrong_type(*n, key, "a string or an array of strings");
  std::vector<std::string> values;
  for (const auto& element : *n->as_array()) {
    if (!element.is_string())
      return error_at(element, key_path(key), std::string("expected strings, found ") + type_name(element));
    values.push_back(element.as_string()->get());
  }
  out = std::move(values);
  return Ok{};
}

Status TableReader::integer_list(std::string_view key, std::vector<std::int64_t>& out, std::int64_t min,
                                 std::int64_t max) {
  const toml::node* n = node(key);
  if (!n) return Ok{};
  if (!n->is_array() || n->as_array()->empty()) return wrong_type(*n, key, "a non-empty array of integers");
  std::vector<std::int64_t> values;
  for (const auto& element : *n->as_array()) {
    if (!element.is_integer())
      return error_at(element, key_path(key), std::string("expected integers, found ") + type_name(element));
    const std::int64_t v = element.as_integer()->get();
    if (v < min || v > max)
      return error_at(element, key_path(key),
                      std::to_string(v) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                          "]");
    values.push_back(v);
  }
  out = std::move(values);
  return Ok{};
}

Status TableReader::path(std::string_view key, std::string& out) {
  if (auto s = string(key, out); !s) return s;
  if (const toml::node* n = table_.get(key)) out = resolve_path(*n, out, file_);
  return Ok{};
}

Status TableReader::path_list(std::string_view key, std::vector<std::string>& out) {
  if (auto s = string_list(key, out); !s) return s;
  const toml::node* n = table_.get(key);
  if (!n) return Ok{};
  for (auto& p : out)
    p = resolve_path(*n, p, file_);
  return Ok{};
}

Result<const toml::table*> TableReader::subtable(std::string_view key) {
  const toml::node* n = node(key);
  if (!n) return static_cast<const toml::table*>(nullptr);
  if (!n->is_table()) return wrong_type(*n, key, "a table");
  return n->as_table();
}

Status TableReader::optional_table(std::string_view key, const std::function<Status(TableReader&)>& read) {
  auto sub = subtable(key);
  ACTORPIPE_TRY(sub);
  if (!*sub) return Ok{};
  TableReader reader(**sub, key_path(key), file_);
  if (auto s = read(reader); !s) return s;
  for (const std::string& known : reader.known_)
    nested_[known].push_back(reader.key_path(known));
  return reader.finish();
}

Result<std::vector<const toml::table*>> TableReader::table_array(std::string_view key) {
  std::vector<const toml::table*> tables;
  const toml::node* n = node(key);
  if (!n) return tables;
  if (n->is_table()) return std::vector<const toml::table*>{n->as_table()};
  if (!n->is_array()) return wrong_type(*n, key, "an array of tables ([[" + key_path(key) + "]])");
  for (const auto& element : *n->as_array()) {
    if (!element.is_table())
      return error_at(element, key_path(key), std::string("expected tables, found ") + type_name(element));
    tables.push_back(element.as_table());
  }
  return tables;
}

Status TableReader::require(std::string_view key) {
  known_.emplace(key);
  if (table_.get(key)) return Ok{};
  // "profil" for "profile" is better reported as the typo it is.
  for (auto&& [present, value] : table_) {
    if (known_.contains(present.str())) continue;
    if (text::closest(present.str(), {std::string(key)}) == key)
      return error_at(present.source(), key_path(present.str()),
                      "unknown key, did you mean '" + std::string(key) + "'?");
  }
  return error_at(table_, key_path(key), "missing (this key is required)");
}

Status TableReader::finish() const {
  std::vector<std::string> known(known_.begin(), known_.end());
  for (auto&& [key, value] : table_) {
    if (known_.contains(key.str())) continue;
    const std::string name(key.str());
    if (const auto in = nested_.find(name); in != nested_.end())
      return error_at(key.source(), key_path(name),
                      "unknown key at this level, did you mean " + text::join(in->second, " or ") + "?");
    return error_at(key.source(), key_path(name), "unknown key" + text::did_you_mean(name, known));
  }
  return Ok{};
}

} // namespace actorpipe::config
