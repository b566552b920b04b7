#pragma once

/// When a parameter server applies pushed gradients and answers the pipelines that
/// pushed them, as logic without actors or tensors (the parameter-server actor,
/// actors/parameter_server_actor, drives one per stage):
///   - staleness 0, synchronous: the pushes of a round are gathered until every
///     pipeline that is not away has pushed; they are applied as one step (their mean)
///     and every pusher is answered;
///   - staleness k > 0, stale synchronous parallel: each push is applied as it comes;
///     its pusher is answered once it is at most k pushes ahead of the slowest
///     pipeline that is not away, and held until then.
/// A pipeline is away while it has no work (the job says): no round waits for it and
/// it does not count as the slowest. Coming back, it counts as having kept up with the
/// slowest of the others, since having no work did not put it behind.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorpipe::sync {

/// What follows an event: the pushes to apply now as one step, and the pipelines to
/// answer (after applying them).
struct ServerDecision {
  std::vector<std::size_t> apply;
  std::vector<std::size_t> answer;
};

class ServerGate {
public:
  /// Throws std::invalid_argument for no pipelines.
  ServerGate(std::size_t pipelines, std::uint64_t staleness);

  /// Pipeline `pipeline` pushed. A second push before its answer (or naming no
  /// pipeline) is a std::logic_error.
  ServerDecision push(std::size_t pipeline);

  /// Pipeline `pipeline` has no work (true) or has work again (false).
  ServerDecision set_away(std::size_t pipeline, bool away);

  /// Pushes applied from `pipeline` so far (raised on coming back from away).
  std::uint64_t pushes(std::size_t pipeline) const { return pushes_[pipeline]; }
  bool waiting(std::size_t pipeline) const { return waiting_[pipeline]; }

private:
  ServerDecision decide();

  std::uint64_t staleness_;
  std::vector<std::uint64_t> pushes_;
  std::vector<bool> waiting_; ///< pushed and not yet answered
  std::vector<bool> applied_; ///< waiting, with its push applied (held by staleness)
  std::vector<bool> away_;
};

} // namespace actorpipe::sync
