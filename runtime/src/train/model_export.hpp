#pragma once

/// A trained imported model taken back out (actorpipe::export_model): a run of a
/// TorchScript model records which file it trained (model.json in its folder); its
/// checkpoint's parameters go back into that module, saved as TorchScript and as a
/// state_dict under the names the file gave them. LibTorch inside.

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>

#include <string>

namespace actorpipe::train {

/// The record a run leaves in its folder of the model file it trained.
inline constexpr const char* model_record_file = "model.json";

/// For a job of an imported TorchScript model: `run_dir`/model.json, naming the model
/// file and its SHA-256, so that an export finds the module the checkpoint fits and
/// refuses one changed since. Nothing for a built-in model.
Status write_model_record(const JobSpec& job, const std::string& run_dir);

} // namespace actorpipe::train
