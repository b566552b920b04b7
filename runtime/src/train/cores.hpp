#pragma once

/// The cores a run computes on. Stage actors of one process share the cores this
/// process may use evenly. Each compute thread sets its own LibTorch intra-op thread
/// count (OpenMP's belongs to the calling thread); when there are more stage actors
/// than cores, each is bound to a core it shares with its pipeline neighbours.

#include <cstddef>
#include <optional>
#include <vector>

namespace actorpipe::train {

/// The cores this process may run on (its affinity mask), ascending; never empty.
std::vector<int> usable_cores();

/// The core of actor `index` of `actors` (more than `cores`), spread evenly in order:
/// consecutive actors, pipeline neighbours, share a core.
int shared_core(const std::vector<int>& cores, std::size_t index, std::size_t actors);

/// The core stage actor `index` of `actors` (pipeline-major) is bound to: when they
/// outnumber the cores, pipeline neighbours share one (shared_core); nullopt when each
/// has a core or more, where the operating system places threads better than a binding
/// would (it gives a busy stage the core an idle neighbour leaves).
std::optional<int> stage_core(const std::vector<int>& cores, std::size_t index, std::size_t actors);

/// Binds the calling thread, and threads it starts later (OpenMP's team), to `core`.
/// False when the system refuses; the thread then runs where it did.
bool bind_thread_to(int core);

/// Binds every thread of this process, and the threads they start later, to `cores`
/// (a worker process given its share of a machine's cores). False when the system
/// refuses for one of them.
bool bind_process_to(const std::vector<int>& cores);

/// Binds the calling thread to `cores` for as long as it lives, then gives the thread
/// back the cores it could run on before (its affinity mask).
class CoreBinding {
public:
  explicit CoreBinding(const std::vector<int>& cores);
  ~CoreBinding();
  CoreBinding(const CoreBinding&) = delete;
  CoreBinding& operator=(const CoreBinding&) = delete;

private:
  std::vector<int> before_;
};

/// Cores [first, first + count) of `cores`, wrapping around: share `k` of `count` cores
/// each is cores_of(cores, k * count, count).
std::vector<int> cores_of(const std::vector<int>& cores, std::size_t first, std::size_t count);

/// The size of one of `workers` even shares of the usable cores; at least one.
int compute_threads_for(std::size_t workers);

/// Makes LibTorch use `threads` intra-op threads for compute on the calling thread.
/// Cheap when already so.
void use_compute_threads(int threads);

} // namespace actorpipe::train
