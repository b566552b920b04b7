/// Scheduler `1f1b`: warm-up, then one forward and one backward in turn, then cool-down
/// (PipeDream-Flush, DAPPLE). Same bubble as GPipe, but stage s holds at most p − s
/// micro-batches of activations instead of all m.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

using namespace actorpipe;

class OneFOneBScheduler : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {}));
    return one_f_one_b_schedule(request.stages, request.micro_batch_sizes);
  }
};

} // namespace

ACTORPIPE_PLUGIN(OneFOneBScheduler, "1f1b", "1.0.0", "warm-up, one forward one backward, cool-down")
