#pragma once

/// The engine's pending events, earliest first and, at equal times, by instance, so
/// that runs repeat exactly: a heap for models of a few instances, and buckets of one
/// time each for many alike pipelines.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace actorpipe::sim {

enum class Kind : std::uint16_t { action_done, iteration_start };
/// Where the action that ends sends its output: known when it starts, so that what its
/// end will touch can be fetched ahead of it (prefetch_ahead()).
enum class Towards : std::uint16_t { nowhere, next, previous };

struct Event {
  double time;
  std::uint32_t instance;
  Kind kind;
  Towards towards = Towards::nowhere;
  /// Times are never negative (nor −0: push() adds +0), so their bits order as they
  /// do: two integer compares, cheaper in the heap's inner loop than floating-point
  /// ones with their checks for NaN.
  bool operator>(const Event& other) const {
    const std::uint64_t a = std::bit_cast<std::uint64_t>(time), b = std::bit_cast<std::uint64_t>(other.time);
    return (a > b) | ((a == b) & (instance > other.instance));
  }
};
constexpr Kind action_done = Kind::action_done, iteration_start = Kind::iteration_start;

/// The pending events, earliest first and, at equal times, by instance, so that runs
/// repeat exactly: a 4-ary heap, for models of a few instances, whose events seldom
/// share a time.
class EventHeap {
public:
  bool empty() const { return heap_.empty(); }
  /// The heap serves models small enough to sit in the caches: nothing to look ahead to.
  const Event* ahead(std::size_t) const { return nullptr; }
  void push(Event e) {
    e.time += 0.0; // −0 becomes +0, which orders as its bits
    std::size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!(heap_[parent] > e)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  /// Every pending event, in no particular order.
  template <class Visit> void for_each(Visit visit) const {
    for (const Event& e : heap_)
      visit(e);
  }
  /// Every pending event `by` later: adding one amount to every time keeps their order.
  void shift(double by) {
    for (Event& e : heap_)
      e.time += by;
  }

  Event pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t least = first;
      for (std::size_t c = first + 1; c < std::min(first + 4, n); ++c)
        least = heap_[least] > heap_[c] ? c : least;
      if (!(last > heap_[least])) break;
      heap_[i] = heap_[least];
      i = least;
    }
    heap_[i] = last;
    return top;
  }

private:
  std::vector<Event> heap_;
};

/// The same order for models of many instances: events are kept in buckets of one
/// time each, and only the distinct times go through a heap. Pipelines that run alike
/// finish their actions at the same moments, so ten thousand pending events often share
/// a few dozen times.
class EventBuckets {
public:
  bool empty() const { return current_ == none && times_.empty(); }

  /// The event `distance` pops away in the bucket being drained, if it holds one: what
  /// its instance will touch can be fetched into the caches before it is popped.
  const Event* ahead(std::size_t distance) const {
    if (current_ == none) return nullptr;
    const Bucket& bucket = buckets_[current_];
    const std::size_t at = bucket.next + distance;
    return at < bucket.events.size() ? &bucket.events[at] : nullptr;
  }

  void push(Event e) {
    e.time += 0.0; // −0 becomes +0: one bucket for one time
    const std::uint64_t key = std::bit_cast<std::uint64_t>(e.time);
    std::uint32_t id = recent_;
    if (id == none || recent_key_ != key) {
      const auto found = index_.find(key);
      if (found == index_.end()) {
        id = allocate(e.time);
        buckets_[id].events.push_back(e);
        index_.emplace(key, id);
        times_.push({e.time, id});
        remember(key, id);
        return;
      }
      id = found->second;
      remember(key, id);
    }
    Bucket& bucket = buckets_[id];
    if (id == current_) {
      // Being drained: keep what is left in order.
      const auto at =
          std::upper_bound(bucket.events.begin() + static_cast<std::ptrdiff_t>(bucket.next), bucket.events.end(), e,
                           [](const Event& a, const Event& b) { return a.instance < b.instance; });
      bucket.events.insert(at, e);
      return;
    }
    bucket.sorted = bucket.sorted && bucket.events.back().instance <= e.instance;
    bucket.events.push_back(e);
  }

  /// Every pending event, in no particular order.
  template <class Visit> void for_each(Visit visit) const {
    for (std::uint32_t id = 0; id < buckets_.size(); ++id) {
      const Bucket& bucket = buckets_[id];
      if (!live(id)) continue;
      for (std::size_t k = bucket.next; k < bucket.events.size(); ++k)
        visit(bucket.events[k]);
    }
  }
  /// Every pending event `by` later. Times that were equal stay equal, so the buckets
  /// keep their events; each is keyed by its new time.
  void shift(double by) {
    index_.clear();
    decltype(times_) times;
    for (std::uint32_t id = 0; id < buckets_.size(); ++id) {
      if (!live(id)) continue;
      Bucket& bucket = buckets_[id];
      bucket.time += by;
      for (std::size_t k = bucket.next; k < bucket.events.size(); ++k)
        bucket.events[k].time = bucket.time;
      index_.emplace(std::bit_cast<std::uint64_t>(bucket.time), id);
      if (id != current_) times.push({bucket.time, id});
    }
    times_ = std::move(times);
    recent_ = none;
  }

  Event pop() {
    if (current_ == none) {
      current_ = times_.top().second;
      times_.pop();
      Bucket& bucket = buckets_[current_];
      if (!bucket.sorted)
        std::stable_sort(bucket.events.begin(), bucket.events.end(),
                         [](const Event& a, const Event& b) { return a.instance < b.instance; });
    }
    Bucket& bucket = buckets_[current_];
    const Event e = bucket.events[bucket.next++];
    if (bucket.next == bucket.events.size()) {
      release(current_);
      current_ = none;
    }
    return e;
  }

private:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  struct Bucket {
    double time = 0;
    std::vector<Event> events;
    std::size_t next = 0;
    bool sorted = true;
  };

  std::uint32_t allocate(double time) {
    std::uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    Bucket& bucket = buckets_[id];
    bucket.time = time;
    bucket.events.clear();
    bucket.next = 0;
    bucket.sorted = true;
    return id;
  }
  /// Whether bucket `id` holds pending events: a released one holds none.
  bool live(std::uint32_t id) const { return buckets_[id].next < buckets_[id].events.size(); }
  void release(std::uint32_t id) {
    buckets_[id].events.clear();
    buckets_[id].next = 0;
    index_.erase(std::bit_cast<std::uint64_t>(buckets_[id].time));
    free_.push_back(id);
    if (id == recent_) recent_ = none;
  }
  /// The bucket pushed to last: alike pipelines push runs of events of one time, so
  /// most pushes find their bucket without the hash.
  void remember(std::uint64_t key, std::uint32_t id) {
    recent_key_ = key;
    recent_ = id;
  }

  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_; ///< time's bits → bucket
  std::priority_queue<std::pair<double, std::uint32_t>, std::vector<std::pair<double, std::uint32_t>>, std::greater<>>
      times_;
  std::uint32_t current_ = none;
  std::uint64_t recent_key_ = 0;
  std::uint32_t recent_ = none;
};

} // namespace actorpipe::sim
