#pragma once

/// The gradient all-reduce of one stage index over the pipelines, done by the replica
/// whose gradients are ready last, on its own thread, which then releases the others.
/// A sync actor of its own put a third thread on every step's critical path: on a busy
/// machine waking it cost up to a scheduler slice (about 1.9 ms at p90 on two shared
/// cores, against 0.6 ms with that thread at real-time priority). Needs no CAF: the
/// stage actors call it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace actorpipe::actors {

class SyncRound {
public:
  /// `reduce` replaces the replicas' gradients by their reduction (train::sum_gradients
  /// in a run); it runs once per step, after every replica's gradients are ready.
  SyncRound(std::size_t stage, std::size_t members, std::function<void()> reduce);

  /// Pipeline `pipeline`'s replica has its gradients of `step` ready and touches them
  /// no more until released. True for the arrival that completes the round: reduce()
  /// has run on the caller's thread and the caller must release the others. Throws
  /// std::logic_error for an arrival that breaks the protocol (an unknown pipeline, a
  /// second arrival, another step's gradients while one is being reduced), and
  /// whatever reduce() throws.
  bool arrive(std::uint64_t step, std::size_t pipeline);

  std::size_t stage() const { return stage_; }

private:
  std::size_t stage_;
  std::function<void()> reduce_;
  std::mutex mutex_;
  std::uint64_t step_ = 0;    ///< the step whose gradients are arriving
  std::vector<bool> arrived_; ///< by pipeline
  std::size_t count_ = 0;
};

} // namespace actorpipe::actors
