#pragma once

/// What the process does with memory it frees (train.retain_memory).

namespace actorpipe::train {

/// Makes the C library keep the memory this process frees for its next allocations,
/// instead of handing large blocks back to the operating system and faulting fresh
/// pages in for the next micro-batch. Where page faults are slow (virtual machines),
/// that round trip costs a small model more than its compute, and a different amount
/// in every run. Process-wide and lasting: a caching allocator's trade, memory held at
/// its high-water mark. Does nothing where the C library is not glibc.
void retain_freed_memory();

} // namespace actorpipe::train
