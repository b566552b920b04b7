/// Intra-op threads per compute thread.

#include "compute_threads.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

namespace actorpipe::train {

int compute_threads_for(std::size_t workers) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<std::size_t>(1, cores / std::max<std::size_t>(1, workers)));
}

void use_compute_threads(int threads) {
  thread_local int current = 0;
  if (threads < 1 || threads == current) return;
  at::set_num_threads(threads);
  current = threads;
}

} // namespace actorpipe::train
