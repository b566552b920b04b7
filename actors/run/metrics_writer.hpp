#pragma once

/// A run's metrics as it goes: metrics.jsonl, a line a step and an evaluation; beside
/// it metrics.csv, the same as a table, rewritten at each checkpoint and at the end;
/// and, with output.tensorboard, a TensorBoard event file that grows with the lines, so
/// that TensorBoard follows a run live. A resumed run starts all three from the lines
/// up to its checkpoint.

#include <actorpipe/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>

namespace actorpipe::actors {

class MetricsWriter {
public:
  /// Writes the files afresh in `folder` (by rename: a link planted there is replaced,
  /// its target left alone), starting from the lines of `resume_from`'s metrics up to
  /// step `step` (none: empty).
  static Result<MetricsWriter> open(const std::string& folder, const std::string& resume_from, std::uint64_t step,
                                    bool tensorboard);

  /// Appends a line to metrics.jsonl and its scalars to the event file, and flushes.
  Status write(const nlohmann::json& line);
  /// metrics.csv from every line so far.
  Status write_table();

private:
  MetricsWriter() = default;
  std::string folder_;
  std::ofstream metrics_;
  std::ofstream events_; ///< open only with output.tensorboard
  double wall_time_ = 0;
};

} // namespace actorpipe::actors
