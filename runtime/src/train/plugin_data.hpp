#pragma once

/// `data.dataset = "plugin"`: the arrays a data set plugin (a module's DataSource or a
/// Lua function) returns, checked as an npy folder's are.
/// LibTorch inside: include only from the training code.

#include "train/datasets.hpp"

#include <actorpipe/plugin_registry.hpp>

namespace actorpipe::train {

/// Asks data.plugin, found in `plugins` (null: the default folders and the job's
/// plan.plugin_path), for the job's data. Arrays whose bytes do not match their shape
/// and type, and everything array_data_sets refuses, are errors naming the plugin and
/// the array.
Result<DataSets> plugin_data(const JobSpec& job, const PluginRegistry* plugins);

} // namespace actorpipe::train
