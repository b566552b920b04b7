/// ReplicaBarrier: who arrived, and the round run by the last to arrive.

#include "replica_barrier.hpp"

#include <stdexcept>
#include <string>

namespace actorpipe::actors {

ReplicaBarrier::ReplicaBarrier(std::size_t stage, std::size_t members, std::function<bool(std::uint64_t)> sync)
    : stage_(stage), sync_(std::move(sync)), member_(members, true), arrived_(members, false), members_(members) {}

ReplicaBarrier::ReplicaBarrier(std::size_t stage, const std::vector<std::size_t>& pipelines,
                               std::function<bool(std::uint64_t)> sync)
    : stage_(stage), sync_(std::move(sync)), members_(pipelines.size()) {
  for (const std::size_t p : pipelines) {
    if (p >= member_.size()) member_.resize(p + 1, false);
    member_[p] = true;
  }
  arrived_.assign(member_.size(), false);
}

ReplicaBarrier::Arrival ReplicaBarrier::arrive(std::uint64_t step, std::size_t pipeline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string where = "sync of stage " + std::to_string(stage_) + ": ";
    if (pipeline >= member_.size() || !member_[pipeline])
      throw std::logic_error(where + "gradients from unknown pipeline " + std::to_string(pipeline));
    if (count_ == 0) step_ = step;
    if (step != step_ || arrived_[pipeline])
      throw std::logic_error(where + "pipeline " + std::to_string(pipeline) + " sent gradients of step " +
                             std::to_string(step) + " while step " + std::to_string(step_) + " is being reduced");
    arrived_[pipeline] = true;
    if (++count_ < members_) return Arrival::waiting;
    // Every replica waits to be released before it touches its gradients again, so
    // the reduction needs no lock, and no one arrives for the next step before it.
    arrived_.assign(arrived_.size(), false);
    count_ = 0;
  }
  return sync_(step) ? Arrival::stepped : Arrival::reduced;
}

} // namespace actorpipe::actors
