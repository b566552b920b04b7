/// Scheduler `gpipe`: all forwards, then all backwards (GPipe). Simple and robust; every
/// micro-batch's activations are held at once, and the bubble is (p − 1)/(m + p − 1).

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

using namespace actorpipe;

class GpipeScheduler : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    return gpipe_schedule(request.stages, request.micro_batch_sizes);
  }
};

} // namespace

ACTORPIPE_PLUGIN(GpipeScheduler, "gpipe", "1.0.0", "all forwards, then all backwards (GPipe)")
