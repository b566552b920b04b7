#pragma once

/// This process's memory as the kernel counts it: what a run reports beside its loss,
/// where no device allocator counts for it (the CPU).

#include <cstdint>

namespace actorpipe {

/// Resident bytes now (/proc/self/statm); 0 where the kernel does not say.
std::uint64_t resident_bytes();

} // namespace actorpipe
