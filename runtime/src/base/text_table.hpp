#pragma once

/// A plain-text table with aligned columns, for reports on a terminal.

#include <string>
#include <vector>

namespace actorpipe::text {

class Table {
public:
  enum class Align { left, right };
  struct Column {
    std::string title;
    Align align = Align::left;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  std::string str() const;

private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

} // namespace actorpipe::text
