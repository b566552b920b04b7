#pragma once

/// The barrier where one stage index's replicas (one per pipeline) meet each step for
/// the sync policy's round (a gradient all-reduce, or steps and parameter averaging):
/// the replica whose gradients are ready last runs the round on its own thread, then
/// releases the others. (Not the plugin ABI's actorpipe::SyncRound, which says what a
/// round is.)
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

class ReplicaBarrier {
public:
  /// `sync(step)` runs the round on the replicas once per step, after every replica's
  /// gradients are ready (train::SyncExecutor in a run), and says whether the replicas
  /// have stepped (then they must not step again).
  ReplicaBarrier(std::size_t stage, std::size_t members, std::function<bool(std::uint64_t step)> sync);
  /// The round of some pipelines' replicas only: those of one process, in a run of
  /// several, whose sync() reduces across the processes too.
  ReplicaBarrier(std::size_t stage, const std::vector<std::size_t>& pipelines,
                 std::function<bool(std::uint64_t step)> sync);

  enum class Arrival {
    waiting, ///< others are yet to arrive: wait to be released
    reduced, ///< this arrival completed the round; every replica steps itself
    stepped, ///< this arrival completed the round, after which no replica steps
  };

  /// Pipeline `pipeline`'s replica has its gradients of `step` ready and touches them
  /// no more until released. For the arrival that completes the round, sync() has run
  /// on the caller's thread and the caller must release the others. Throws
  /// std::logic_error for an arrival that breaks the protocol (an unknown pipeline, a
  /// second arrival, another step's gradients while one is being reduced), and
  /// whatever sync() throws.
  Arrival arrive(std::uint64_t step, std::size_t pipeline);

  std::size_t stage() const { return stage_; }

private:
  std::size_t stage_;
  std::function<bool(std::uint64_t)> sync_;
  std::mutex mutex_;
  std::uint64_t step_ = 0;    ///< the step whose gradients are arriving
  std::vector<bool> member_;  ///< by pipeline: whose replica takes part
  std::vector<bool> arrived_; ///< by pipeline
  std::size_t members_ = 0;
  std::size_t count_ = 0;
};

} // namespace actorpipe::actors
