// A scheduler that says it puts three chunks in a V, which no schedule can be.
#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

class ThreeChunkV : public actorpipe::Scheduler {
public:
  actorpipe::Result<actorpipe::Chunking> chunking(const actorpipe::PluginOptions&) override {
    return actorpipe::Chunking{3, actorpipe::ChunkShape::v};
  }
  actorpipe::Result<actorpipe::Schedule> schedule(const actorpipe::ScheduleRequest& request) override {
    return actorpipe::zbv_schedule(request.stages, request.micro_batch_sizes);
  }
};

} // namespace

ACTORPIPE_PLUGIN(ThreeChunkV, "three-chunk-v", "1.0.0", "says a V of three chunks")
