// Schedulers that get their chunks wrong: one says two chunks and returns a schedule
// without any, one says a V of three.
#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

class SaysTwoChunks : public actorpipe::Scheduler {
public:
  actorpipe::Result<actorpipe::Chunking> chunking(const actorpipe::PluginOptions&) override {
    return actorpipe::Chunking{2, actorpipe::ChunkShape::loop};
  }
  actorpipe::Result<actorpipe::Schedule> schedule(const actorpipe::ScheduleRequest& request) override {
    return actorpipe::one_f_one_b_schedule(request.stages, request.micro_batch_sizes);
  }
};

} // namespace

ACTORPIPE_PLUGIN(SaysTwoChunks, "says-two-chunks", "1.0.0", "says two chunks per device, schedules none")
