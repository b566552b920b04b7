// An info block that says partitioner, and a factory that makes a mapper.
#include <actorpipe/plugin.hpp>

namespace {

class AMapper final : public actorpipe::Mapper {
public:
  actorpipe::Result<actorpipe::Mapping> map(const actorpipe::PlanContext&, const actorpipe::Partition&) override {
    return actorpipe::Mapping{};
  }
};

} // namespace

ACTORPIPE_PLUGIN_EXPORT const actorpipe::PluginInfo actorpipe_plugin_info = {
    actorpipe::plugin_abi_version, "partitioner", "wrong-kind", "1.0.0", "says one kind and makes another"};

ACTORPIPE_PLUGIN_EXPORT actorpipe::Plugin* actorpipe_plugin_create() noexcept { return new AMapper(); }
