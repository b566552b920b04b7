#pragma once

/// The floor under a hop between stage actors: the operating system's own hand-off
/// between two threads.

#include <optional>

namespace actorpipe::bench {

/// The floor under a hop: the operating system handing a pointer to a thread blocked
/// on a mutex and condition variable, timed from before the notify to when the receiver
/// runs (median µs over `passes` hand-offs). With `sender_computes` the sender goes on
/// computing for 50 µs, as a stage runs its optimizer step after sending a gradient
/// back; else it blocks at once, as a stage does after a forward send. The receiver
/// answers at once and blocks again, so it is always waiting when timed. With `core`
/// both threads are bound to that one core and the sender yields it after the notify,
/// as stage actors bound to a shared core do; else the operating system places them
/// (on two cores, when it can).
double os_handoff_us(bool sender_computes, std::optional<int> core, int passes = 1500);

} // namespace actorpipe::bench
