// A second partitioner called "uniform": clashes with the shipped one.
#include <actorpipe/plugin.hpp>

namespace {
class Clash : public actorpipe::Partitioner {
public:
  actorpipe::Result<actorpipe::Partition> partition(const actorpipe::PlanContext&) override {
    return actorpipe::Error::run_failed("unreachable");
  }
};
} // namespace

ACTORPIPE_PLUGIN(Clash, "uniform", "9.9.9", "clashes with the shipped uniform partitioner")
