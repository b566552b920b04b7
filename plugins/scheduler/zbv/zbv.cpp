/// Scheduler `zbv` (ZB-V of Zero Bubble Pipeline Parallelism, Qi et al., ICLR 2024):
/// two chunks per device in a V, so the first device also holds the model's last piece
/// and the last device turns round without a send; zero bubble played out greedily
/// with the virtual stages' own times, within 1F1B's peak stash (zbv_schedule,
/// docs/schedules.md).

#include "common/scheduling/zero_bubble.hpp"

namespace {

using namespace actorpipe;

class ZeroBubbleV : public Scheduler {
public:
  Result<Chunking> chunking(const PluginOptions& options) override {
    ACTORPIPE_TRY(check_options(options, {}));
    return Chunking{2, ChunkShape::v};
  }

  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    if (request.micro_batch_sizes.empty()) return Error::bad_input("needs at least one micro-batch");
    return zbv_schedule(request.stages, request.micro_batch_sizes, scheduling::stage_times(request));
  }
};

} // namespace

ACTORPIPE_PLUGIN(ZeroBubbleV, "zbv", "1.0.0", "zero bubble at 1F1B's memory: two chunks per device in a V")
