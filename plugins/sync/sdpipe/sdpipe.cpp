/// Sync policy `sdpipe` (SDPipe's semi-decentralised sync): every pipeline steps on its
/// own batches; after each local step a stage asks the run's group scheduler which
/// peers to average with, and the members of each group it forms average their
/// parameters among themselves. The options are GroupScheduling's, by the same names:
/// the scheduler's adaptive window (`window_ms`, `min_window_ms`, `max_window_ms`,
/// `grow`, `shrink`), pairs above `pairs_above` askers, and a round connecting every
/// pipeline at least every `force_every` rounds (0: never); `overlap` ("true" or
/// "false"): whether a pipeline computes its next step while its group averages.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class SdpipePolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"window_ms", "min_window_ms", "max_window_ms", "grow", "shrink",
                                                  "pairs_above", "force_every", "overlap"}));
    GroupScheduling s;
    auto max_window = number_option(request.options, "max_window_ms", s.max_window_ms, 0, 1e6);
    ACTORPIPE_TRY(max_window);
    auto window = number_option(request.options, "window_ms", s.window_ms, 0, *max_window);
    ACTORPIPE_TRY(window);
    auto min_window = number_option(request.options, "min_window_ms", s.min_window_ms, 0, *window);
    ACTORPIPE_TRY(min_window);
    auto grow = number_option(request.options, "grow", s.grow, 1.0001, 1e3);
    ACTORPIPE_TRY(grow);
    auto shrink = number_option(request.options, "shrink", s.shrink, 1e-6, 1);
    ACTORPIPE_TRY(shrink);
    auto pairs_above = count_option(request.options, "pairs_above", s.pairs_above, 1, 1000000);
    ACTORPIPE_TRY(pairs_above);
    auto force_every = count_option(request.options, "force_every", s.force_every, 0, 1000000000);
    ACTORPIPE_TRY(force_every);
    auto overlap = choice_option(request.options, "overlap", s.overlap ? "true" : "false", {"true", "false"});
    ACTORPIPE_TRY(overlap);
    SyncRound round;
    round.kind = SyncRound::Kind::scheduled_averaging;
    round.scheduling = {*window,
                        *min_window,
                        *max_window,
                        *grow,
                        *shrink,
                        static_cast<std::size_t>(*pairs_above),
                        static_cast<std::size_t>(*force_every),
                        *overlap == "true"};
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(SdpipePolicy, "sdpipe", "1.0.0",
                 "asynchronous pipelines; a central scheduler groups them to average (SDPipe)")
