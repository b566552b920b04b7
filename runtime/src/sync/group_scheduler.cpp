/// GroupScheduler: windows, groups, and the forced rounds that keep every pipeline
/// connected.

#include "sync/group_scheduler.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace actorpipe::sync {

GroupScheduler::GroupScheduler(std::size_t pipelines, GroupScheduling options)
    : pipelines_(pipelines), options_(options), window_(options.window_ms), asked_(pipelines, false),
      in_forced_(pipelines, false), idle_(pipelines, false), asks_(pipelines, 0), part_(pipelines) {
  if (pipelines == 0) throw std::invalid_argument("a group scheduler needs pipelines");
  if (!(options.min_window_ms >= 0 && options.min_window_ms <= options.window_ms &&
        options.window_ms <= options.max_window_ms))
    throw std::invalid_argument("the windows must satisfy 0 ≤ min_window_ms ≤ window_ms ≤ max_window_ms");
  if (!(options.grow > 1)) throw std::invalid_argument("grow must be above 1");
  if (!(options.shrink > 0 && options.shrink <= 1)) throw std::invalid_argument("shrink must be in (0, 1]");
  std::iota(part_.begin(), part_.end(), std::size_t{0});
}

std::size_t GroupScheduler::find(std::size_t p) {
  while (part_[p] != p)
    p = part_[p] = part_[part_[p]];
  return p;
}

void GroupScheduler::arrive(std::size_t pipeline, double now_ms) {
  if (pipeline >= pipelines_) throw std::logic_error("group scheduler: unknown pipeline " + std::to_string(pipeline));
  if (asked_[pipeline])
    throw std::logic_error("group scheduler: pipeline " + std::to_string(pipeline) + " asked twice in one round");
  asked_[pipeline] = true;
  idle_[pipeline] = false; // it asks, so it has worked
  ++asks_[pipeline];
  if (pipelines_ > 1 && options_.force_every > 0 && asks_[pipeline] % options_.force_every == 0) {
    in_forced_[pipeline] = true;
    forced_since_ = now_ms;
    return;
  }
  waiting_.push_back(pipeline);
  if (!opened_) opened_ = now_ms;
}

void GroupScheduler::set_idle(std::size_t pipeline, bool idle, double now_ms) {
  if (pipeline >= pipelines_) throw std::logic_error("group scheduler: unknown pipeline " + std::to_string(pipeline));
  if (idle_[pipeline] == idle) return;
  idle_[pipeline] = idle;
  forced_since_ = std::max(forced_since_, now_ms);
}

bool GroupScheduler::forced_complete() const {
  bool any = false;
  for (std::size_t p = 0; p < pipelines_; ++p) {
    if (!in_forced_[p] && !idle_[p]) return false;
    any = any || in_forced_[p];
  }
  return any;
}

std::optional<double> GroupScheduler::deadline() const {
  std::optional<double> due;
  if (forced_complete()) due = forced_since_;
  if (!waiting_.empty()) due = std::min(due.value_or(*opened_ + window_), *opened_ + window_);
  return due;
}

std::vector<Group> GroupScheduler::close_forced() {
  // One member of each part still apart, together; the others go alone.
  Group representatives;
  std::vector<bool> seen(pipelines_, false);
  for (std::size_t p = 0; p < pipelines_; ++p)
    if (in_forced_[p] && !seen[find(p)]) {
      seen[find(p)] = true;
      representatives.push_back(p);
    }
  std::vector<Group> groups{representatives};
  for (std::size_t p = 0; p < pipelines_; ++p)
    if (in_forced_[p] && std::find(representatives.begin(), representatives.end(), p) == representatives.end())
      groups.push_back({p});
  for (std::size_t p = 0; p < pipelines_; ++p)
    if (in_forced_[p]) in_forced_[p] = asked_[p] = false;
  return groups;
}

std::vector<Group> GroupScheduler::close_window() {
  std::vector<Group> groups;
  if (waiting_.size() == 1) {
    // Alone: wait longer for company, up to the largest window.
    if (window_ < options_.max_window_ms) {
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
    asked_[p] = false;
  waiting_.clear();
  opened_.reset();
  return groups;
}

void GroupScheduler::remember(const std::vector<Group>& groups) {
  for (const Group& g : groups)
    for (std::size_t i = 1; i < g.size(); ++i)
      part_[find(g[i])] = find(g[0]);
  const std::size_t root = find(0);
  bool connected = true;
  for (std::size_t p = 1; p < pipelines_ && connected; ++p)
    connected = find(p) == root;
  if (connected) std::iota(part_.begin(), part_.end(), std::size_t{0}); // apart again from here on
}

std::vector<Group> GroupScheduler::close(double now_ms) {
  std::vector<Group> groups;
  if (forced_complete() && now_ms >= forced_since_) groups = close_forced();
  if (!waiting_.empty() && now_ms >= *opened_ + window_) {
    std::vector<Group> more = close_window();
    groups.insert(groups.end(), more.begin(), more.end());
  }
  remember(groups);
  return groups;
}

} // namespace actorpipe::sync
