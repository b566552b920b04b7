#pragma once

/// The pipeline actor: cuts its share of each batch into the plan's micro-batches,
/// feeds them to the first stage, routes their labels to the last, and answers the
/// step with the share's mean loss once every stage has stepped. Under clipping it adds
/// up its stages' parts of the gradient's norm and tells them the whole. It runs in the process
/// of its stages where they all run in one worker process that makes its batches'
/// rows: a step then costs one message between the processes and its answer, not one
/// per micro-batch and stage.

#include "parcel.hpp"
#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <vector>

namespace actorpipe::actors {

struct PipelineConfig {
  std::vector<stage_actor> stages;
  std::vector<std::uint32_t> micro_batch_sizes; ///< the plan's, in feeding order
  /// The samples each micro-batch's loss is a share of: the whole batch over all
  /// pipelines, so that the gradients summed over the pipelines are the batch mean's;
  /// or the pipeline's own share, for a policy whose pipelines step on their own.
  std::uint32_t batch_size = 0;
  std::uint64_t first_step = 1; ///< the number of the pipeline's first step, which it counts on from
  Route to_first, to_last;      ///< how inputs and labels reach the first and last stage
  /// Makes the rows a share's parcels name, in a worker process (JobConfig::make_rows);
  /// within the job's process its parcels hold the tensors.
  RowMaker make_rows;
};

pipeline_actor spawn_pipeline(caf::actor_system& system, PipelineConfig config);

} // namespace actorpipe::actors
