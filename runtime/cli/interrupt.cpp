#include "interrupt.hpp"

#include <csignal>

namespace actorpipe::cli {

namespace {

std::atomic<int> caught{0};
std::atomic<bool> stop{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

extern "C" void on_signal(int signal) {
  caught.store(signal);
  stop.store(true);
  std::signal(signal, SIG_DFL);
}

} // namespace

namespace {

/// What ends a command at its next safe point: Ctrl-C, a polite kill, a closed terminal
/// (SIGHUP), Ctrl-\ (SIGQUIT; its default would dump core and lose the checkpoint).
constexpr int stopping[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

} // namespace

InterruptScope::InterruptScope() {
  for (const int s : stopping)
    std::signal(s, on_signal);
}

InterruptScope::~InterruptScope() {
  for (const int s : stopping)
    std::signal(s, SIG_DFL);
}

int InterruptScope::signal() { return caught.load(); }

const std::atomic<bool>& InterruptScope::requested() { return stop; }

} // namespace actorpipe::cli
