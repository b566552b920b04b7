// A correct info block but no factory.
#include <actorpipe/plugin.hpp>

ACTORPIPE_PLUGIN_EXPORT const actorpipe::PluginInfo actorpipe_plugin_info = {
    actorpipe::plugin_abi_version, "mapper", "no-factory", "1.0.0", "forgot its factory"};
