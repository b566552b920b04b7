/// Partitioner `greedy`: walks the blocks in order and closes a stage once it holds its
/// share of the model's compute (forward + backward), so that every stage gets about
/// the same work; each stage keeps at least one block. Its Lua twin is greedy.lua.

#include <actorpipe/plugin.hpp>

#include <string>

namespace {

using namespace actorpipe;

class GreedyPartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const std::size_t blocks = context.profile.blocks.size();
    const std::size_t stages = context.stages;
    if (stages == 0 || stages > blocks)
      return Error::bad_input("cannot put " + std::to_string(blocks) + " blocks in " + std::to_string(stages) +
                              " stages");
    double total = 0;
    for (const Block& b : context.profile.blocks)
      total += b.forward_ms + b.backward_ms;
    Partition partition;
    partition.cuts.push_back({0, 0});
    double done = 0;
    for (std::size_t b = 0; b < blocks && partition.cuts.size() < stages; ++b) {
      done += context.profile.blocks[b].forward_ms + context.profile.blocks[b].backward_ms;
      const std::size_t stage = partition.cuts.size(); // the stage block b closes, 1-based
      // Close the stage at its share, or when the stages after it need every block left.
      const bool share_reached = done >= total * static_cast<double>(stage) / static_cast<double>(stages);
      const bool blocks_needed = blocks - (b + 1) == stages - stage;
      if (share_reached || blocks_needed) partition.cuts.push_back({b + 1, 0});
    }
    partition.cuts.push_back({blocks, 0});
    return partition;
  }
};

} // namespace

ACTORPIPE_PLUGIN(GreedyPartitioner, "greedy", "1.0.0", "equal compute per stage, cut greedily at block boundaries")
