/// Scheduler `interleaved-1f1b` (Megatron-LM's virtual pipeline stages): each device
/// holds `chunks` pieces of the model in a loop, so a micro-batch goes down the devices
/// `chunks` times and the warm-up and drain are `chunks` times shorter, for `chunks`
/// times the sends (interleaved_one_f_one_b_schedule, docs/schedules.md).
///
/// [plan.options.interleaved-1f1b]
/// chunks = 2   # pieces of the model per device, 2 to 8

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

namespace {

using namespace actorpipe;

class Interleaved1F1B : public Scheduler {
public:
  Result<Chunking> chunking(const PluginOptions& options) override {
    ACTORPIPE_TRY(check_options(options, {"chunks"}));
    auto chunks = count_option(options, "chunks", 2, 2, 8);
    ACTORPIPE_TRY(chunks);
    return Chunking{static_cast<std::uint32_t>(*chunks), ChunkShape::loop};
  }

  Result<Schedule> schedule(const ScheduleRequest& request) override {
    auto chunking = this->chunking(request.options);
    ACTORPIPE_TRY(chunking);
    if (request.micro_batch_sizes.empty()) return Error::bad_input("needs at least one micro-batch");
    return interleaved_one_f_one_b_schedule(request.stages, request.micro_batch_sizes, chunking->chunks);
  }
};

} // namespace

ACTORPIPE_PLUGIN(Interleaved1F1B, "interleaved-1f1b", "1.0.0",
                 "1F1B over chunks of the model in a loop on every device: a shorter warm-up")
