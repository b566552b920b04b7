#pragma once

/// The turns the chunks of one device take (schedules with chunks: interleaved, V):
/// each chunk is a stage actor of its own, and the device's list in the schedule says
/// in which order their actions run. An actor acts only when the turn is its; having
/// acted it passes the turn on and wakes the chunk whose turn it is now.

#include "protocol.hpp"

#include <actorpipe/schedule.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace actorpipe::actors {

class DeviceTurns {
public:
  /// `order`: the virtual stage of each action in the device's list, every step.
  explicit DeviceTurns(std::vector<std::size_t> order);

  /// The actor of virtual stage `stage` is there to be woken.
  void join(std::size_t stage, stage_actor actor);
  /// Whether the device's next action is virtual stage `stage`'s.
  bool mine(std::size_t stage) const;
  /// Virtual stage `stage` ran the device's next action: the actor whose turn it is now,
  /// when that is another one that has joined.
  std::optional<stage_actor> pass(std::size_t stage);

private:
  mutable std::mutex mutex_;
  std::vector<std::size_t> order_;
  std::size_t next_ = 0;
  std::map<std::size_t, stage_actor> actors_;
};

/// The turns of every device of every pipeline of a run, made as stages ask for them.
class DeviceTurnsTable {
public:
  /// Device `stage`'s turns in pipeline `pipeline` (schedule.stages[stage]'s order);
  /// none when the schedule has no chunks.
  std::shared_ptr<DeviceTurns> of(const Schedule& schedule, std::size_t pipeline, std::size_t stage);

private:
  std::mutex mutex_;
  std::map<std::pair<std::size_t, std::size_t>, std::shared_ptr<DeviceTurns>> turns_;
};

} // namespace actorpipe::actors
