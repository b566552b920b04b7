/// ServerGate: synchronous rounds or bounded staleness for a parameter server.

#include "sync/server_gate.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace actorpipe::sync {

ServerGate::ServerGate(std::size_t pipelines, std::uint64_t staleness)
    : staleness_(staleness), pushes_(pipelines, 0), waiting_(pipelines, false), applied_(pipelines, false),
      away_(pipelines, false) {
  if (pipelines == 0) throw std::invalid_argument("a parameter server needs pipelines");
}

ServerDecision ServerGate::push(std::size_t pipeline) {
  if (pipeline >= pushes_.size())
    throw std::logic_error("parameter server: unknown pipeline " + std::to_string(pipeline));
  if (waiting_[pipeline])
    throw std::logic_error("parameter server: pipeline " + std::to_string(pipeline) + " pushed twice unanswered");
  waiting_[pipeline] = true;
  away_[pipeline] = false;
  if (staleness_ == 0) return decide();
  applied_[pipeline] = true;
  ++pushes_[pipeline];
  ServerDecision d = decide();
  d.apply.insert(d.apply.begin(), pipeline);
  return d;
}

ServerDecision ServerGate::set_away(std::size_t pipeline, bool away) {
  if (pipeline >= pushes_.size())
    throw std::logic_error("parameter server: unknown pipeline " + std::to_string(pipeline));
  if (!away && away_[pipeline]) {
    std::uint64_t slowest = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t q = 0; q < pushes_.size(); ++q)
      if (q != pipeline && !away_[q]) slowest = std::min(slowest, pushes_[q]);
    if (slowest != std::numeric_limits<std::uint64_t>::max()) pushes_[pipeline] = std::max(pushes_[pipeline], slowest);
  }
  away_[pipeline] = away;
  return decide();
}

ServerDecision ServerGate::decide() {
  ServerDecision d;
  const std::size_t n = pushes_.size();
  if (staleness_ == 0) {
    bool complete = false;
    for (std::size_t p = 0; p < n; ++p) {
      if (!away_[p] && !waiting_[p]) return d; // the round waits for it
      complete = complete || waiting_[p];
    }
    if (!complete) return d;
    for (std::size_t p = 0; p < n; ++p)
      if (waiting_[p]) {
        d.apply.push_back(p);
        d.answer.push_back(p);
        waiting_[p] = false;
        ++pushes_[p];
      }
    return d;
  }
  std::uint64_t slowest = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t p = 0; p < n; ++p)
    if (!away_[p]) slowest = std::min(slowest, pushes_[p]);
  for (std::size_t p = 0; p < n; ++p)
    if (applied_[p] && (slowest == std::numeric_limits<std::uint64_t>::max() || pushes_[p] - slowest <= staleness_)) {
      d.answer.push_back(p);
      waiting_[p] = applied_[p] = false;
    }
  return d;
}

} // namespace actorpipe::sync
