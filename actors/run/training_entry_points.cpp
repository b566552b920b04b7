/// The training runtime's entry points under one C name (train/training_entry.hpp):
/// how a Lua script in a process without LibTorch reaches run_training,
/// launch_training, measure_profile and export_model once it has loaded this library.

#include "device/cuda_queries.hpp"
#include "train/training_entry.hpp"

#include <actorpipe/export.hpp>

extern "C" ACTORPIPE_EXPORT const actorpipe::train::TrainingEntryPoints* actorpipe_training_entry_points() {
  static const actorpipe::train::TrainingEntryPoints entry_points{actorpipe::train::training_entry_version,
                                                                  actorpipe::load_training_data,
                                                                  actorpipe::run_training,
                                                                  actorpipe::launch_training,
                                                                  actorpipe::measure_profile,
                                                                  actorpipe::predicted_step_ms,
                                                                  actorpipe::tune_plan,
                                                                  actorpipe::device::cuda_built,
                                                                  actorpipe::device::query_gpus,
                                                                  actorpipe::device::check_nccl,
                                                                  actorpipe::device::libtorch_text,
                                                                  actorpipe::export_model};
  return &entry_points;
}
