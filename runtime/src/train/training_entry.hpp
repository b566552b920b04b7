#pragma once

/// How libactorpipe (a Lua script's actorpipe.run and actorpipe.profile) reaches the
/// training runtime, which lives in a library of its own so that planning never loads
/// LibTorch. The training runtime offers its entry points under one C name: a process
/// that links it (a host with libactorpipe_training, actorpipe-train) answers from
/// there, any other loads the library on first use.

#include <actorpipe/gpu.hpp>
#include <actorpipe/launch.hpp>
#include <actorpipe/training.hpp>

#include <cstdint>
#include <string>

namespace actorpipe::train {

struct TrainingEntryPoints {
  std::uint32_t version; ///< training_entry_version of the library that filled it
  Result<std::shared_ptr<const TrainingData>> (*load_training_data)(const JobSpec&, const PluginRegistry*);
  Result<RunSummary> (*run_training)(const JobSpec&, const Plan&, const RunOptions&);
  Result<RunSummary> (*launch_training)(const JobSpec&, const Plan&, const RunOptions&, const LaunchOptions&);
  Result<ModelProfile> (*measure_profile)(const JobSpec&, const MeasureOptions&);
  Result<double> (*predicted_step_ms)(const JobSpec&, const Plan&);
  Result<std::pair<Plan, TuneReport>> (*tune_plan)(const JobSpec&, const Plan&, const TuneOptions&);
  /// The GPUs as the training runtime's LibTorch sees them (device/cuda_queries.hpp).
  bool (*cuda_built)();
  Result<std::vector<GpuInfo>> (*query_gpus)();
  Result<std::string> (*check_nccl)();
  std::string (*libtorch_text)();
  Result<ExportedModel> (*export_model)(const std::string& run_dir, const std::string& out);
};

/// Raised whenever the struct above changes.
inline constexpr std::uint32_t training_entry_version = 6;
/// `extern "C" const TrainingEntryPoints* actorpipe_training_entry_points()`.
inline constexpr const char* training_entry_symbol = "actorpipe_training_entry_points";

/// The file to load the training library from when this process links none (the CLI
/// names the one beside it); empty, the default: by its soname, through the loader's
/// search path.
void set_training_library(std::string path);

/// For a program that links the training runtime statically (actorpipe-train).
void set_training_entry_points(const TrainingEntryPoints* entry_points);

/// The training runtime's entry points, loading its library the first time; an error
/// says why it cannot be had (not installed, of another version).
Result<const TrainingEntryPoints*> training_entry_points();

} // namespace actorpipe::train

/// Defined by the training runtime only (actors/run/training_entry_points.cpp).
extern "C" const actorpipe::train::TrainingEntryPoints* actorpipe_training_entry_points();
