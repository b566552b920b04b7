#pragma once

/// Ctrl-C (SIGINT) and SIGTERM while a command works: the first asks it to stop at its
/// next safe point (a run at a checkpoint, a script at its next instructions); the
/// handler then steps aside, so a second one ends the process at once.

#include <atomic>

namespace actorpipe::cli {

class InterruptScope {
public:
  /// Catches both signals until the scope ends.
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  /// The signal that came, or 0.
  static int signal();
  /// Set once a signal came.
  static const std::atomic<bool>& requested();
};

} // namespace actorpipe::cli
