/// GroupScheduler: windows, groups, and the forced rounds that keep every pipeline
/// connected.

#include "sync/group_scheduler.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace actorpipe::sync {

std::optional<std::string> scheduling_problem(const GroupScheduling& options) {
  if (!(options.min_window_ms >= 0 && options.min_window_ms <= options.window_ms &&
        options.window_ms <= options.max_window_ms))
    return "the windows must satisfy 0 ≤ min_window_ms ≤ window_ms ≤ max_window_ms";
  if (!(options.grow > 1)) return "grow must be above 1";
  if (!(options.shrink > 0 && options.shrink <= 1)) return "shrink must be in (0, 1]";
  return std::nullopt;
}

GroupScheduler::GroupScheduler(std::size_t pipelines, GroupScheduling options)
    : pipelines_(pipelines), options_(options), window_(options.window_ms), is_waiting_(pipelines, false),
      away_(pipelines, false), part_(pipelines) {
  if (pipelines == 0) throw std::invalid_argument("a group scheduler needs pipelines");
  if (auto problem = scheduling_problem(options)) throw std::invalid_argument(*problem);
  std::iota(part_.begin(), part_.end(), std::size_t{0});
}

std::size_t GroupScheduler::find(std::size_t p) const {
  while (part_[p] != p)
    p = part_[p];
  return p;
}

bool GroupScheduler::forcing() const {
  return pipelines_ > 1 && options_.force_every > 0 && since_connected_ + 1 >= options_.force_every;
}

void GroupScheduler::arrive(std::size_t pipeline, double now_ms) {
  if (pipeline >= pipelines_) throw std::logic_error("group scheduler: unknown pipeline " + std::to_string(pipeline));
  if (is_waiting_[pipeline])
    throw std::logic_error("group scheduler: pipeline " + std::to_string(pipeline) + " asked twice in one round");
  is_waiting_[pipeline] = true;
  away_[pipeline] = false;
  waiting_.push_back(pipeline);
  if (!opened_) opened_ = now_ms;
}

void GroupScheduler::set_away(std::size_t pipeline, bool away) {
  if (pipeline >= pipelines_) throw std::logic_error("group scheduler: unknown pipeline " + std::to_string(pipeline));
  away_[pipeline] = away;
}

bool GroupScheduler::everyone_here() const {
  for (std::size_t p = 0; p < pipelines_; ++p)
    if (!is_waiting_[p] && !away_[p]) return false;
  return true;
}

bool GroupScheduler::every_part_here() const {
  std::vector<bool> present(pipelines_, false), here(pipelines_, false);
  for (std::size_t p = 0; p < pipelines_; ++p) {
    if (!away_[p]) present[find(p)] = true;
    if (is_waiting_[p]) here[find(p)] = true;
  }
  return present == here;
}

std::optional<double> GroupScheduler::deadline() const {
  if (waiting_.empty()) return std::nullopt;
  if (forcing()) return every_part_here() ? opened_ : std::nullopt;
  if (everyone_here()) return opened_; // no one else can come
  return *opened_ + window_;
}

std::vector<Group> GroupScheduler::forced_groups() {
  // One asker of each part still apart, together; the other askers go alone.
  Group representatives;
  std::vector<bool> seen(pipelines_, false);
  for (const std::size_t p : waiting_)
    if (!seen[find(p)]) {
      seen[find(p)] = true;
      representatives.push_back(p);
    }
  std::sort(representatives.begin(), representatives.end());
  std::vector<Group> groups{representatives};
  for (const std::size_t p : waiting_)
    if (std::find(representatives.begin(), representatives.end(), p) == representatives.end()) groups.push_back({p});
  return groups;
}

void GroupScheduler::remember(const std::vector<Group>& groups) {
  for (const Group& g : groups)
    for (std::size_t i = 1; i < g.size(); ++i)
      part_[find(g[i])] = find(g[0]);
  ++rounds_;
  ++since_connected_;
  const std::size_t root = find(0);
  bool connected = true;
  for (std::size_t p = 1; p < pipelines_ && connected; ++p)
    connected = find(p) == root;
  if (connected) { // the count starts afresh
    std::iota(part_.begin(), part_.end(), std::size_t{0});
    since_connected_ = 0;
  }
}

std::vector<Group> GroupScheduler::close(double now_ms) {
  const auto due = deadline();
  if (!due || now_ms < *due) return {};
  std::vector<Group> groups;
  if (forcing()) {
    groups = forced_groups();
  } else if (waiting_.size() == 1) {
    // Alone: wait longer for company, up to the largest window, while some may come.
    if (window_ < options_.max_window_ms && !everyone_here()) {
      window_ = std::min(options_.max_window_ms, window_ * options_.grow);
      return {};
    }
    groups.push_back({waiting_.front()});
  } else {
    if (waiting_.size() > options_.pairs_above) {
      for (std::size_t i = 0; i + 1 < waiting_.size(); i += 2)
        groups.push_back({waiting_[i], waiting_[i + 1]});
      if (waiting_.size() % 2 == 1) groups.back().push_back(waiting_.back());
    } else {
      groups.push_back(waiting_);
    }
    window_ = std::max(options_.min_window_ms, window_ * options_.shrink);
  }
  for (const std::size_t p : waiting_)
    is_waiting_[p] = false;
  waiting_.clear();
  opened_.reset();
  remember(groups);
  return groups;
}

} // namespace actorpipe::sync
