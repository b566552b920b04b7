/// Sync policy `parameter-server` (the baseline of PipeDream and of classic data
/// parallelism): a server per stage owns the weights and their optimizer; every
/// pipeline pushes its gradient after each backward and pulls the weights back.
/// `staleness` (option) bounds how far ahead of the slowest pipeline one may run:
/// 0 is synchronous (the server sums every pipeline's push and steps once, as
/// allreduce does); k > 0 applies each push as it comes (stale synchronous parallel);
/// "none", no bound. The default, 2, keeps a slow pipeline's pushes from going stale
/// without bound, which costs accuracy when pipelines' speeds drift apart.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class ParameterServerPolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"staleness"}));
    SyncRound round;
    round.kind = SyncRound::Kind::parameter_server;
    const auto it = request.options.find("staleness");
    if (it != request.options.end() && it->second == "none") return round; // unbounded
    auto staleness = count_option(request.options, "staleness", 2, 0, 1000000000);
    ACTORPIPE_TRY(staleness);
    round.staleness = *staleness;
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(ParameterServerPolicy, "parameter-server", "1.0.0",
                 "a server per stage owns the weights; pipelines push gradients and pull weights")
