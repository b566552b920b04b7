#pragma once

/// A trace in the Chrome trace event format, which Perfetto and chrome://tracing open:
/// processes and threads with names, and complete spans on them. Written as text as
/// it grows, since a large trace holds millions of spans.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

namespace actorpipe {

class ChromeTrace {
public:
  ChromeTrace();
  void process(std::size_t pid, const std::string& name);
  /// A thread (track) of `pid`; tracks sort by `tid`.
  void thread(std::size_t pid, std::size_t tid, const std::string& name);
  /// A span from `start_us` lasting `duration_us` microseconds; with `step`, the
  /// training step it belongs to, and `cpu_us`, the CPU time its thread got during it
  /// (less than the span where the thread waited for its core), shown among its arguments.
  void span(std::size_t pid, std::size_t tid, const std::string& name, const char* category, double start_us,
            double duration_us, std::optional<std::uint64_t> step = std::nullopt,
            std::optional<double> cpu_us = std::nullopt);
  /// A value of the counter track `name` of `pid` from `at_us` on (Perfetto draws
  /// each counter as a track of its own, a step function of its values).
  void counter(std::size_t pid, const std::string& name, double at_us, double value);
  /// The whole trace; the writer is done after this.
  std::string finish();

private:
  void comma();
  std::ostringstream out_;
  bool first_ = true;
};

} // namespace actorpipe
