#include "device_turns.hpp"

#include <stdexcept>
#include <string>

namespace actorpipe::actors {

DeviceTurns::DeviceTurns(std::vector<std::size_t> order) : order_(std::move(order)) {
  if (order_.empty()) throw std::invalid_argument("a device's turns need at least one action");
}

void DeviceTurns::join(std::size_t stage, stage_actor actor) {
  const std::lock_guard lock(mutex_);
  actors_[stage] = std::move(actor);
}

bool DeviceTurns::mine(std::size_t stage) const {
  const std::lock_guard lock(mutex_);
  return order_[next_] == stage;
}

std::optional<stage_actor> DeviceTurns::pass(std::size_t stage) {
  const std::lock_guard lock(mutex_);
  if (order_[next_] != stage)
    throw std::logic_error("stage " + std::to_string(stage) + " acted in stage " + std::to_string(order_[next_]) +
                           "'s turn");
  if (++next_ == order_.size()) next_ = 0; // the next step starts the list again
  const std::size_t now = order_[next_];
  if (now == stage) return std::nullopt;
  const auto it = actors_.find(now);
  if (it == actors_.end()) return std::nullopt; // it looks for its turn when it joins
  return it->second;
}

std::shared_ptr<DeviceTurns> DeviceTurnsTable::of(const Schedule& schedule, std::size_t pipeline, std::size_t stage) {
  if (schedule.chunks == 1) return nullptr;
  const std::lock_guard lock(mutex_);
  auto& turns = turns_[{pipeline, stage}];
  if (!turns) {
    std::vector<std::size_t> order;
    for (const Action& a : schedule.stages.at(stage))
      order.push_back(schedule.virtual_stage(stage, a.chunk));
    turns = std::make_shared<DeviceTurns>(std::move(order));
  }
  return turns;
}

} // namespace actorpipe::actors
