/// Sync policy `average`: every pipeline steps on its own gradient, and every `period`
/// steps (option, default 1) the replicas of a stage average their parameters (model
/// averaging, "local SGD"). With period 1 and SGD it equals `allreduce`: the mean of
/// the replicas' steps is the step of the summed gradient.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class AveragePolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"period"}));
    auto period = number_option(request.options, "period", 1, 1, 1e9);
    ACTORPIPE_TRY(period);
    SyncRound round;
    round.kind = SyncRound::Kind::average_parameters;
    if (request.round % static_cast<std::uint64_t>(*period) != 0) return round; // a local step only
    round.groups.push_back(all_pipelines(request.pipelines));
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(AveragePolicy, "average", "1.0.0", "local steps; parameters averaged over every pipeline each period")
