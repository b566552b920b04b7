/// Sync policy `elastic` (AvgPipe's elastic averaging): each stage keeps a centre
/// variable; every pipeline steps on its own gradient, and every `tau` steps (option,
/// default 1) each replica moves towards the centre and the centre towards the
/// replicas, with moving rate `alpha` (option, default 0.9 / pipelines):
///   d_p = x_p − c;   x_p ← x_p − alpha · d_p;   c ← c + alpha · Σ_p d_p.
/// With alpha = 1 / pipelines the centre becomes the replicas' mean. With
/// `asynchronous` = true (option) the pipelines do not wait for each other: each moves
/// alone with the centre every `tau` of its own steps, computing on meanwhile, and
/// alpha may be up to 1 (0.5: the two meet halfway).

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class ElasticPolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"alpha", "tau", "asynchronous"}));
    const double pipelines = static_cast<double>(request.pipelines);
    auto asynchronous = choice_option(request.options, "asynchronous", "false", {"true", "false"});
    ACTORPIPE_TRY(asynchronous);
    // In a round of all pipelines, above 1 / pipelines the centre would overshoot the
    // replicas' mean; a pipeline moving alone with the centre keeps it between the two
    // for any rate up to 1.
    auto alpha =
        number_option(request.options, "alpha", 0.9 / pipelines, 1e-9, *asynchronous == "true" ? 1.0 : 1.0 / pipelines);
    ACTORPIPE_TRY(alpha);
    auto tau = count_option(request.options, "tau", 1, 1, 1000000000);
    ACTORPIPE_TRY(tau);
    SyncRound round;
    round.kind = *asynchronous == "true" ? SyncRound::Kind::elastic_asynchronous : SyncRound::Kind::elastic;
    round.alpha = *alpha;
    round.period = *tau;
    if (round.kind == SyncRound::Kind::elastic_asynchronous) return round;
    if (request.round % *tau != 0) return round; // a local step only
    round.groups.push_back(all_pipelines(request.pipelines));
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(ElasticPolicy, "elastic", "1.0.0", "elastic averaging with a centre variable per stage (AvgPipe)")
