#pragma once

/// SDPipe's central group scheduling for one stage index, as logic without actors or
/// tensors: pipelines that have taken a local step ask which peers to average the
/// stage with; the scheduler gathers the askers of an adaptive time window into
/// groups, and every `force_every` asks of each pipeline holds a round that connects
/// them all. The group-scheduler actor (actors/group_scheduler_actor) drives it with
/// the clock; tests drive it with times of their own.
///
/// The window opens at the first asker and closes `window_ms` later:
///   - one asker alone: the window grows (up to `max_window_ms`) and stays open; at
///     the largest window a lone asker is let go alone (its local step stands);
///   - two or more: one group, or pairs when there are more than `pairs_above` (in
///     arrival order; an odd one out joins the last pair); the window shrinks (down to
///     `min_window_ms`).
/// A pipeline's ask number k · force_every (counted per pipeline) joins the forced
/// round instead: it closes once every pipeline not idle has joined, and groups one
/// member of each part the groups since the last full connection left apart, which
/// connects every pipeline again; the other members go alone. Forced rounds are tied
/// to each pipeline's own count, not to time, so one stage's forced round never waits
/// for a pipeline held in another stage's: a pipeline reaches its k · force_every-th
/// ask of every stage without passing any later forced round.
/// An idle pipeline (no work left: the run drains before evaluating) is not waited for.

#include <actorpipe/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace actorpipe::sync {

using Group = std::vector<std::size_t>;

class GroupScheduler {
public:
  /// Throws std::invalid_argument for settings that cannot work (no pipelines, windows
  /// out of order, a growth ≤ 1 or a shrink outside (0, 1]).
  GroupScheduler(std::size_t pipelines, GroupScheduling options = {});

  /// Pipeline `pipeline` asks at `now_ms`. A pipeline asks once and waits until a close
  /// lets it go; asking again before that (or naming no pipeline) is a std::logic_error.
  void arrive(std::size_t pipeline, double now_ms);

  /// Pipeline `pipeline` has work (false) or none (true) from `now_ms` on. Pipelines
  /// start busy.
  void set_idle(std::size_t pipeline, bool idle, double now_ms);

  /// When the next close lets someone go; none while nobody would.
  std::optional<double> deadline() const;

  /// Lets go whoever is due at `now_ms`: the window's askers once it has passed, the
  /// forced round's once complete; each as a member of a group (a group of one: alone).
  /// Empty when nothing is due.
  std::vector<Group> close(double now_ms);

  double window_ms() const { return window_; }
  /// Whether pipeline `pipeline` waits in the forced round.
  bool forced(std::size_t pipeline) const { return in_forced_[pipeline]; }

private:
  bool forced_complete() const;
  std::vector<Group> close_forced();
  std::vector<Group> close_window();
  void remember(const std::vector<Group>& groups);
  std::size_t find(std::size_t p);

  std::size_t pipelines_;
  GroupScheduling options_;
  double window_;
  std::vector<std::size_t> waiting_; ///< the window's askers, in arrival order
  std::vector<bool> asked_;          ///< by pipeline: waiting in the window or the forced round
  std::vector<bool> in_forced_;
  std::vector<bool> idle_;
  std::vector<std::uint64_t> asks_; ///< by pipeline, since the scheduler started
  std::optional<double> opened_;    ///< when the open window opened
  double forced_since_ = 0;         ///< when the forced round last changed
  std::vector<std::size_t> part_;   ///< union-find over the groups since the last full connection
};

} // namespace actorpipe::sync
