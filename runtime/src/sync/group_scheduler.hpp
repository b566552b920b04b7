#pragma once

/// SDPipe's central group scheduling for one stage index, as logic without actors or
/// tensors: pipelines that have taken a local step ask which peers to average the
/// stage with; the scheduler gathers the askers of an adaptive time window into
/// groups, and every `force_every` rounds at most holds a round that connects them
/// all. The group-scheduler actor (actors/group_scheduler_actor) drives it with the
/// clock; tests drive it with times of their own.
///
/// The window opens at the first asker and closes `window_ms` later, or at once when
/// every pipeline that is not away asks (no one else can come):
///   - one asker alone: the window grows (up to `max_window_ms`) and stays open; at
///     the largest window, or with everyone else away, a lone asker is let go alone
///     (its local step stands);
///   - two or more: one group, or pairs when there are more than `pairs_above` (in
///     arrival order; an odd one out joins the last pair); the window shrinks (down to
///     `min_window_ms`).
/// Rounds (closes that let someone go) are counted since the groups last connected
/// every pipeline (averaged, directly or through others, with every other); once
/// `force_every` − 1 have not, the next round is forced: it waits until each part still
/// apart that has a pipeline not away has an asker, and groups one asker of each part,
/// the others going alone. A pipeline is away while it cannot ask: it has no work (the run drains
/// before evaluating), or it is held in another stage's round (the actor knows). A
/// forced round that an away pipeline missed leaves the next one forced too.

#include <actorpipe/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorpipe::sync {

using Group = std::vector<std::size_t>;

/// Why a scheduler could not run with `options` (windows out of order, a growth ≤ 1, a
/// shrink outside (0, 1]); none when it can. The planner asks it of a policy's round 0,
/// so that a plugin's bad settings are refused before a run.
std::optional<std::string> scheduling_problem(const GroupScheduling& options);

class GroupScheduler {
public:
  /// Throws std::invalid_argument for no pipelines or settings scheduling_problem()
  /// refuses.
  GroupScheduler(std::size_t pipelines, GroupScheduling options = {});

  /// Pipeline `pipeline` asks at `now_ms`. A pipeline asks once and waits until a close
  /// lets it go; asking again before that (or naming no pipeline) is a std::logic_error.
  void arrive(std::size_t pipeline, double now_ms);

  /// Whether pipeline `pipeline` cannot ask for now (no forced round waits for it).
  /// Pipelines start present; asking makes a pipeline present.
  void set_away(std::size_t pipeline, bool away);

  /// When the open round closes; none while nobody waits (or a forced round waits for
  /// pipelines yet to ask).
  std::optional<double> deadline() const;

  /// Closes the round if its deadline has passed (or a forced round has every part it
  /// waits for): each asker let go as a member of a group (a group of one: alone).
  /// Empty when nothing closes yet.
  std::vector<Group> close(double now_ms);

  double window_ms() const { return window_; }
  std::uint64_t rounds() const { return rounds_; }
  /// Whether the next round to close is a forced one.
  bool forcing() const;
  bool waiting(std::size_t pipeline) const { return is_waiting_[pipeline]; }

private:
  bool everyone_here() const;
  /// Whether every part with a pipeline not away has an asker.
  bool every_part_here() const;
  std::vector<Group> forced_groups();
  void remember(const std::vector<Group>& groups);
  std::size_t find(std::size_t p) const;

  std::size_t pipelines_;
  GroupScheduling options_;
  double window_;
  std::vector<std::size_t> waiting_; ///< in arrival order
  std::vector<bool> is_waiting_;
  std::vector<bool> away_;
  std::optional<double> opened_;      ///< when the open window opened
  std::uint64_t rounds_ = 0;          ///< rounds closed
  std::uint64_t since_connected_ = 0; ///< rounds closed since every pipeline was last connected
  std::vector<std::size_t> part_;     ///< union-find over the groups of those rounds
};

} // namespace actorpipe::sync
