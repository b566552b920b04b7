/// Sync policy `allreduce`: the replicas of a stage sum their gradients before every
/// step, so that every pipeline steps with the whole batch's gradient. Synchronous data
/// parallelism, and the reference every other policy is measured against: a run with it
/// equals single-device training.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class AllreducePolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    SyncRound round;
    round.kind = SyncRound::Kind::allreduce_gradients;
    round.groups.push_back(all_pipelines(request.pipelines));
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(AllreducePolicy, "allreduce", "1.0.0", "gradients summed over every pipeline before each step")
