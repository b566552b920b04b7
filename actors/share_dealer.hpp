#pragma once

/// Which pipeline computes each share of a step: the job actor splits every batch into
/// a share per pipeline and deals them here. Lockstep policies give pipeline p the p-th
/// share of every step at once. Asynchronous ones keep each share until a pipeline
/// holds fewer than `most_in_hand` and give it to the one with the fewest in hand, so
/// each pipeline takes shares at its own pace; in turn where every round waits for
/// every pipeline with work (ShareDealer::Order). Needs no CAF: the job actor calls it.

#include "train/payload.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

namespace actorpipe::actors {

/// A step's share for one pipeline: the `part`-th of the step's batch.
struct Share {
  std::uint64_t step = 0;
  std::size_t part = 0;
  train::Payload inputs, labels;
};

class ShareDealer {
public:
  enum class Order : std::uint8_t {
    /// Shares go to pipelines 0, 1, …, P − 1, 0, …: share p of every step to pipeline p.
    /// Asynchronous policies whose every round waits for every pipeline with work
    /// (scheduled averaging forcing each round, a synchronous parameter server) deal so
    /// too: none can run ahead to use a share dealt to the least busy, which would only
    /// make who computes which share depend on timing and, at the run's end, leave a
    /// pipeline holding a share more than the others, to be synced alone.
    in_turn,
    /// The next share to the pipeline with the fewest in hand (ties rotate).
    least_busy,
  };
  static constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

  /// A pipeline is dealt a share only while it holds fewer than `most_in_hand`.
  ShareDealer(std::size_t pipelines, Order order, std::size_t most_in_hand = unbounded);

  struct Dealt {
    std::size_t pipeline = 0;
    Share share;
    bool had_none = false; ///< the pipeline held no share before this one
  };

  /// Queues a share; the shares of a step come in part order.
  void add(Share share);
  /// The queued shares that go out now, oldest first, each with its pipeline; the
  /// others wait until a pipeline is done with one.
  std::vector<Dealt> deal();
  /// Pipeline `pipeline` is done with one of its shares.
  void done(std::size_t pipeline);
  std::size_t in_hand(std::size_t pipeline) const { return in_hand_.at(pipeline); }
  Order order() const { return order_; }
  std::size_t most_in_hand() const { return most_in_hand_; }
  /// Drops the queued shares (the run failed).
  void drop_queued() { queued_.clear(); }

private:
  std::size_t next() const;

  Order order_;
  std::size_t most_in_hand_;
  std::vector<std::size_t> in_hand_; ///< by pipeline: shares dealt and not yet done
  std::size_t after_ = 0;            ///< the pipeline after the one last dealt to
  std::deque<Share> queued_;
};

} // namespace actorpipe::actors
