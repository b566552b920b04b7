/// Scheduler `zb-h1` (ZB-H1 of Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024):
/// 1F1B's order with every backward split into I (the input's gradient, on the
/// critical path) and W (the weights', deferred into the time a stage would wait),
/// stage s deferring up to s Ws: 1F1B's peak memory, a third of its bubble where F, I
/// and W take alike (zb_h1_schedule, docs/schedules.md).

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

using namespace actorpipe;

class ZeroBubbleH1 : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    return zb_h1_schedule(request.stages, request.micro_batch_sizes);
  }
};

} // namespace

ACTORPIPE_PLUGIN(ZeroBubbleH1, "zb-h1", "1.0.0", "zero bubble at 1F1B's memory: I where B was, W deferred")
