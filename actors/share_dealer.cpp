/// ShareDealer: the queue of a run's shares and who takes the next.

#include "share_dealer.hpp"

namespace actorpipe::actors {

ShareDealer::ShareDealer(std::size_t pipelines, Order order, std::size_t most_in_hand)
    : order_(order), most_in_hand_(most_in_hand), in_hand_(pipelines, 0) {}

void ShareDealer::add(Share share) { queued_.push_back(std::move(share)); }

std::size_t ShareDealer::next() const {
  const std::size_t P = in_hand_.size();
  std::size_t chosen = after_ % P;
  if (order_ == Order::least_busy)
    for (std::size_t i = 1; i < P; ++i) {
      const std::size_t p = (after_ + i) % P;
      if (in_hand_[p] < in_hand_[chosen]) chosen = p;
    }
  return chosen;
}

std::vector<ShareDealer::Dealt> ShareDealer::deal() {
  std::vector<Dealt> dealt;
  while (!queued_.empty()) {
    const std::size_t p = next();
    if (in_hand_[p] >= most_in_hand_) break;
    dealt.push_back({p, std::move(queued_.front()), in_hand_[p] == 0});
    queued_.pop_front();
    ++in_hand_[p];
    after_ = p + 1;
  }
  return dealt;
}

void ShareDealer::done(std::size_t pipeline) { --in_hand_.at(pipeline); }

} // namespace actorpipe::actors
