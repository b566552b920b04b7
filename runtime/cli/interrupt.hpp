#pragma once

/// Ctrl-C (SIGINT), SIGTERM, SIGHUP and SIGQUIT while a command works: the first asks it
/// to stop at its next safe point (a run at a checkpoint, tuning between its settings, a
/// script at its next instructions), and the command exits 128 + the signal, as the
/// shell reports one; the handler then steps aside, so a second one ends the process at
/// once.

#include <atomic>

namespace actorpipe::cli {

class InterruptScope {
public:
  /// Catches them until the scope ends.
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
