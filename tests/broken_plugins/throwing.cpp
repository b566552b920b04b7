// A mapper whose map() throws: the macro's guard must turn it into an Error.
#include <actorpipe/plugin.hpp>

#include <stdexcept>

namespace {

class Throws : public actorpipe::Mapper {
public:
  actorpipe::Result<actorpipe::Mapping> map(const actorpipe::PlanContext&, const actorpipe::Partition&) override {
    throw std::runtime_error("mapper exploded");
  }
};

} // namespace

ACTORPIPE_PLUGIN(Throws, "throws", "1.0.0", "throws from map()")
