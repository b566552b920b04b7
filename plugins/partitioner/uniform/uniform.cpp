/// Partitioner `uniform`: the same number of blocks in every stage (the first stages
/// take one more when the count does not divide). The simplest baseline.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class UniformPartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const std::size_t blocks = context.profile.blocks.size();
    const std::size_t stages = context.stages;
    if (stages == 0 || stages > blocks)
      return Error::bad_input("cannot put " + std::to_string(blocks) + " blocks in " + std::to_string(stages) +
                              " stages");
    Partition partition;
    std::size_t next = 0;
    partition.cuts.push_back({0, 0});
    for (std::size_t s = 0; s < stages; ++s) {
      next += blocks / stages + (s < blocks % stages ? 1 : 0);
      partition.cuts.push_back({next, 0});
    }
    return partition;
  }
};

} // namespace

ACTORPIPE_PLUGIN(UniformPartitioner, "uniform", "1.0.0", "equal block counts per stage")
