#pragma once

/// How many cores LibTorch may use for one piece of compute. Its intra-op thread count
/// (OpenMP's) belongs to the calling thread, so every compute thread sets its own:
/// stage actors of one process share the machine's cores evenly instead of each
/// starting a team as large as the machine.

#include <cstddef>

namespace actorpipe::train {

/// An even share of this machine's cores for each of `workers` compute threads of one
/// process; at least one.
int compute_threads_for(std::size_t workers);

/// Makes LibTorch use `threads` intra-op threads for compute on the calling thread.
/// Cheap when already so.
void use_compute_threads(int threads);

} // namespace actorpipe::train
