/// Scheduler `zb-h2` (ZB-H2 of Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024):
/// each stage holding up to 2p − 1 micro-batches, so that forwards run ahead into the
/// warm-up and the sends' latency, played out greedily with the stages' own times
/// (zero_bubble_schedule). Where that is no faster in simulation than zb-h1's order, it
/// is zb-h1's order, at half the memory (docs/schedules.md).

#include "common/scheduling/zero_bubble.hpp"

namespace {

using namespace actorpipe;

class ZeroBubbleH2 : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    if (request.micro_batch_sizes.empty()) return Error::bad_input("needs at least one micro-batch");
    Schedule ahead = zero_bubble_schedule("zb-h2", request.stages, request.micro_batch_sizes, 2 * request.stages - 1,
                                          scheduling::stage_times(request));
    Schedule h1 = zb_h1_schedule(request.stages, request.micro_batch_sizes);
    h1.name = "zb-h2";
    return scheduling::simulated_ms(ahead, request) < scheduling::simulated_ms(h1, request) ? ahead : h1;
  }
};

} // namespace

ACTORPIPE_PLUGIN(ZeroBubbleH2, "zb-h2", "1.0.0", "zero bubble at up to twice 1F1B's memory: forwards ahead")
