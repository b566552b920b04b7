#pragma once

/// SDPipe's central group scheduling, as logic without actors or tensors: pipelines
/// that have taken a local step ask which peers to average one stage with; the
/// scheduler gathers the askers of an adaptive time window into groups, and now and
/// then forces a round that connects every pipeline. The group-scheduler actor drives
/// it with the clock; tests drive it with arrival times of their own.
///
/// The window opens at the first arrival and closes `window_ms` later:
///   - one asker alone: the window doubles (up to `max_window_ms`) and stays open; at
///     the largest window a lone asker is let go alone (a local step);
///   - two or more: they form one group, or pairs when there are more than
///     `pairs_above` (in arrival order; an odd one out joins the last pair); the window
///     shrinks by `shrink` (down to `min_window_ms`).
/// Once the groups since the last time every pipeline was connected (averaged, directly
/// or through others, with every other) connect them all again, that count starts
/// afresh; if they have not after `force_every` − 1 rounds, the next round is forced: it
/// waits for every pipeline and groups one pipeline of each part still apart. So every
/// `force_every` rounds at most, all pipelines are connected.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace actorpipe::sync {

struct GroupSchedulerOptions {
  double window_ms = 1;
  double min_window_ms = 0.01;
  double max_window_ms = 10;
  double grow = 2;
  double shrink = 0.9;
  std::size_t pairs_above = 8;
  std::size_t force_every = 10; ///< P: a forced round at least every P rounds
};

using Group = std::vector<std::size_t>;

class GroupScheduler {
public:
  GroupScheduler(std::size_t pipelines, GroupSchedulerOptions options = {});

  /// Pipeline `pipeline` asks at `now_ms`. A pipeline asks once and waits until a close
  /// lets it go; asking again before that is a std::logic_error.
  void arrive(std::size_t pipeline, double now_ms);

  /// When the open round closes; none while nobody waits (or a forced round waits for
  /// pipelines yet to ask).
  std::optional<double> deadline() const;

  /// Closes the round if its deadline has passed (or a forced round has everyone):
  /// the groups formed, each member let go with its group; a pipeline let go alone
  /// is a group of one. Empty when nothing closes yet.
  std::vector<Group> close(double now_ms);

  double window_ms() const { return window_; }
  std::uint64_t rounds() const { return rounds_; }
  /// Whether the next round to close is a forced one.
  bool forcing() const;

private:
  std::vector<Group> forced_groups();
  void remember(const std::vector<Group>& groups);

  std::size_t pipelines_;
  GroupSchedulerOptions options_;
  double window_;
  std::vector<std::size_t> waiting_; ///< in arrival order
  std::vector<bool> is_waiting_;
  std::optional<double> opened_;   ///< when the open window opened
  std::uint64_t rounds_ = 0;       ///< rounds closed
  std::uint64_t since_forced_ = 0; ///< rounds closed since the last forced one
  std::vector<std::size_t> part_;  ///< union-find over the groups since the last forced round
  std::size_t find(std::size_t p);
};

} // namespace actorpipe::sync
