#pragma once

/// Reads one TOML table into an Options struct, key by key, so that every mistake is
/// reported as "FILE:LINE:COL: key.path: what is wrong" and unknown keys get a
/// "did you mean" suggestion. Internal to the config readers.

#include <actorpipe/option_names.hpp>
#include <actorpipe/error.hpp>

#include <toml++/toml.h>

#include <concepts>
#include <algorithm>
#include <functional>
#include <cstdint>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe::config {

/// Where a region was written: FILE:LINE:COL, or its origin alone for values given on
/// the command line ("--set KEY=VALUE"); none for a node built rather than parsed (a
/// Lua job's table, whose reader places its errors by their keys).
std::optional<SourcePlace> place_of(const toml::source_region& region);

/// place_of() as text; "<input>" where there is none.
std::string where(const toml::source_region& region);

/// Bad input about `key_path`, written at `region` (or `node`): its key and place as
/// data (Error::key, Error::place), the place left out where the node has none.
Error error_at(const toml::source_region& region, std::string_view key_path, std::string_view what);
Error error_at(const toml::node& node, std::string_view key_path, std::string_view what);

/// The deepest TOML actorpipe reads: arrays and inline tables nested, or parts of a
/// dotted key or table name. Far beyond any job, profile, cluster or schedule file.
inline constexpr std::size_t max_toml_depth = 64;

/// Bad input ("SOURCE:LINE:COL: ...") where `text` nests deeper than max_toml_depth,
/// found by a scan of its brackets, braces and dots outside strings and comments.
Status check_toml_depth(std::string_view text, const std::string& source);

/// Parses TOML text, no deeper than max_toml_depth; a syntax error comes back as
/// "SOURCE:LINE:COL: what".
Result<toml::table> parse_toml(std::string_view text, const std::string& source);

/// Parses a TOML file; a syntax error comes back as "FILE:LINE:COL: what".
Result<toml::table> parse_toml_file(const std::string& path);

/// `path` as written in `node`, relative to the folder of the file it came from: the
/// node's own, else `file` (a Lua job's, whose table has no places); command-line
/// values are relative to the current folder.
std::string resolve_path(const toml::node& node, const std::string& path, const std::string& file = {});

class TableReader {
public:
  /// `path` is how the table is named in messages ("plan", "cluster.servers[1]");
  /// `file` is the file it was written in, where its nodes do not say (resolve_path).
  TableReader(const toml::table& table, std::string path, std::string file = {});

  const toml::table& table() const { return table_; }
  const std::string& file() const { return file_; }
  std::string key_path(std::string_view key) const;

  /// Marks `key` as known and returns its node, or nullptr when absent.
  const toml::node* node(std::string_view key);

  /// Each getter leaves `out` as it is when the key is absent (its default).
  Status string(std::string_view key, std::string& out);
  Status choice(std::string_view key, std::string& out, const std::vector<std::string>& allowed);
  /// An option enum's value, spelled as OptionNames<E> spells them.
  template <class E> Status choice(std::string_view key, E& out) {
    std::string value(option_name(out));
    std::vector<std::string> allowed;
    for (const auto& [v, name] : OptionNames<E>::values)
      allowed.emplace_back(name);
    if (auto s = choice(key, value, allowed); !s) return s;
    out = *option_named<E>(value);
    return Ok{};
  }
  /// One option enum's value for all (a string), or one for each of something (an array
  /// of strings, not empty): `out` gets one entry, or the array's.
  template <class E> Status choice_list(std::string_view key, std::vector<E>& out) {
    std::vector<std::string> spelled;
    if (auto s = string_list(key, spelled); !s) return s;
    const toml::node* n = table_.get(key);
    if (!n) return Ok{};
    std::vector<std::string> allowed;
    for (const auto& [v, name] : OptionNames<E>::values)
      allowed.emplace_back(name);
    if (spelled.empty()) return error_at(*n, key_path(key), "expected one value, or one per stage");
    std::vector<E> values;
    for (const std::string& value : spelled) {
      const std::optional<E> e = option_named<E>(value);
      if (!e) return error_at(*n, key_path(key), "'" + value + "' is not one of " + join_choices(allowed));
      values.push_back(*e);
    }
    out = std::move(values);
    return Ok{};
  }
  Status boolean(std::string_view key, bool& out);
  Status number(std::string_view key, double& out, double min, double max);
  Status bytes(std::string_view key, std::uint64_t& out);
  Status bandwidth(std::string_view key, double& out);
  Status duration(std::string_view key, double& out);
  Status string_list(std::string_view key, std::vector<std::string>& out);
  /// An array of integers, each in [min, max].
  Status integer_list(std::string_view key, std::vector<std::int64_t>& out, std::int64_t min, std::int64_t max);
  Status path(std::string_view key, std::string& out);
  Status path_list(std::string_view key, std::vector<std::string>& out);

  template <std::integral T>
  Status integer(std::string_view key, T& out, T min = std::numeric_limits<T>::min(),
                 T max = std::numeric_limits<T>::max()) {
    std::int64_t value = 0;
    auto status = integer64(key, value, static_cast<std::int64_t>(min), clamp_max(max));
    if (status && node_present(key)) out = static_cast<T>(value);
    return status;
  }

  /// A sub-table, or nullptr when absent; an error when the key holds something else.
  Result<const toml::table*> subtable(std::string_view key);
  /// Reads the sub-table `key`, if present, with `read`, then checks it has no unknown
  /// keys. An absent table leaves everything `read` would set at its defaults.
  Status optional_table(std::string_view key, const std::function<Status(TableReader&)>& read);

  /// An array of tables ([[key]]), empty when absent.
  Result<std::vector<const toml::table*>> table_array(std::string_view key);

  /// An error when the key is absent (pointing at the table).
  Status require(std::string_view key);

  /// Reports the first key that no getter asked for; where it is a key of a table read
  /// here (`stages` beside [plan]), says where it belongs.
  Status finish() const;

private:
  Status integer64(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max);
  /// `max` as the signed bound integer64() takes: kept where it fits, the largest signed
  /// value where it does not (an unsigned 64-bit key's own maximum, not its bound).
  template <class T> static std::int64_t clamp_max(T max) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t))
      return static_cast<std::int64_t>(
          std::min<std::uint64_t>(max, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
    else
      return static_cast<std::int64_t>(max);
  }
  bool node_present(std::string_view key) const { return table_.get(key) != nullptr; }
  Error wrong_type(const toml::node& node, std::string_view key, std::string_view expected) const;
  static std::string join_choices(const std::vector<std::string>& allowed);

  const toml::table& table_;
  std::string path_;
  std::string file_;
  std::set<std::string, std::less<>> known_;
  /// The keys of the tables optional_table() read, with their paths: "stages" →
  /// {"plan.stages"}.
  std::map<std::string, std::vector<std::string>, std::less<>> nested_;
};

/// "a string", "an integer", ... for messages.
const char* type_name(const toml::node& node);

} // namespace actorpipe::config
