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

InterruptScope::InterruptScope() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

InterruptScope::~InterruptScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

int InterruptScope::signal() { return caught.load(); }

const std::atomic<bool>& InterruptScope::requested() { return stop; }

} // namespace actorpipe::cli
