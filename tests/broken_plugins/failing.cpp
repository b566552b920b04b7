// Valid plugins that fail when used: one returns an error, one throws.
#include <actorpipe/plugin.hpp>

#include <stdexcept>

namespace {

class Refuses : public actorpipe::Partitioner {
public:
  actorpipe::Result<actorpipe::Partition> partition(const actorpipe::PlanContext&) override {
    return actorpipe::Error::bad_input("refuses every model on purpose");
  }
};

} // namespace

ACTORPIPE_PLUGIN(Refuses, "refuses", "1.0.0", "returns an error from partition()")
