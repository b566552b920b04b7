// A module that claims an ABI version the loader does not speak.
#include <actorpipe/plugin.hpp>

ACTORPIPE_PLUGIN_EXPORT const actorpipe::PluginInfo actorpipe_plugin_info = {
    actorpipe::plugin_abi_version + 41, "partitioner", "wrong-abi", "1.0.0", "built for another ABI"};
ACTORPIPE_PLUGIN_EXPORT actorpipe::Plugin* actorpipe_plugin_create() noexcept { return nullptr; }
