#pragma once

/// The sweeps of the split searches (StageSweep, SendAwareSplit::spread) ask, for each stage
/// end j, the best of the starts i in a window that only moves one way as j does. A
/// monotone queue answers in amortised O(1): a start joins at the back and drops those
/// behind it whose key is no lower (they can never be best again), and starts that leave
/// the window leave at the front, so the best is always at the front.

#include <cstddef>
#include <vector>

namespace actorpipe::autopipe {

class StartQueue {
public:
  /// Room for `capacity` starts: each joins once between clear()s.
  explicit StartQueue(std::size_t capacity) : items_(capacity) {}

  void clear() { head_ = tail_ = 0; }
  bool empty() const { return head_ == tail_; }
  void push(std::size_t index, double key) {
    while (tail_ > head_ && items_[tail_ - 1].key >= key)
      --tail_;
    items_[tail_++] = {index, key};
  }
  /// The window's edge passed these: starts below `low` (a forward sweep) ...
  void drop_below(std::size_t low) {
    while (head_ < tail_ && items_[head_].index < low)
      ++head_;
  }
  /// ... or above `high` (a backward one).
  void drop_above(std::size_t high) {
    while (head_ < tail_ && items_[head_].index > high)
      ++head_;
  }
  std::size_t best() const { return items_[head_].index; }
  double best_key() const { return items_[head_].key; }

private:
  struct Item {
    std::size_t index;
    double key;
  };
  /// [head_, tail_): the queue; the storage is never resized, so that the sweeps'
  /// inner loops keep its ends in registers.
  std::vector<Item> items_;
  std::size_t head_ = 0, tail_ = 0;
};

} // namespace actorpipe::autopipe
