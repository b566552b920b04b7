#pragma once

/// Where a Lua file writes each key of the tables it builds, read from its text, so
/// that a mistake in a Lua job is reported at FILE:LINE like one in a TOML job. Lua
/// keeps no such record: this scans the source for `name =` and `["name"] =` inside
/// table constructors and for `local name =` / `name =` assignments, and follows a
/// key path through nested constructors. A key that the script computes rather than
/// writes is found at its nearest written ancestor.

#include <string>
#include <string_view>
#include <vector>

namespace actorpipe::lua {

class SourceKeys {
public:
  static SourceKeys scan(std::string_view source);

  /// The line of the deepest written key along `path` (plan.options.autopipe.x), or of
  /// the chunk's last top-level `return` where none is written; 0 when neither is.
  int line_of(const std::vector<std::string>& path) const;

private:
  struct Field {
    std::string name;
    int line = 0;
    int scope = -1; ///< the constructor its value opens, if it opens one
  };
  std::vector<std::vector<Field>> scopes_; ///< scope 0: the chunk's assignments
  int return_line_ = 0;

  int deepest(int scope, const std::vector<std::string>& path, std::size_t at, int& line) const;
};

} // namespace actorpipe::lua
