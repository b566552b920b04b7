/// Mapper `sequential`: stage s of pipeline p on device p · stages + s, i.e. pipelines
/// fill the cluster's devices in server order. Ignores speed and topology; the baseline
/// heterogeneity-aware mappers are compared with.

#include <actorpipe/plugin.hpp>

namespace {

using namespace actorpipe;

class SequentialMapper : public Mapper {
public:
  Result<Mapping> map(const PlanContext& context, const Partition&) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const std::size_t needed = context.pipelines * context.stages;
    if (needed > context.cluster.devices.size())
      return Error::bad_input(std::to_string(context.pipelines) + " pipelines × " + std::to_string(context.stages) +
                              " stages need " + std::to_string(needed) + " devices; cluster '" + context.cluster.name +
                              "' has " + std::to_string(context.cluster.devices.size()));
    Mapping mapping;
    for (std::size_t p = 0; p < context.pipelines; ++p) {
      auto& row = mapping.devices.emplace_back();
      for (std::size_t s = 0; s < context.stages; ++s)
        row.push_back(p * context.stages + s);
    }
    return mapping;
  }
};

} // namespace

ACTORPIPE_PLUGIN(SequentialMapper, "sequential", "1.0.0", "stage s of pipeline p on the (p·stages + s)-th device")
