#pragma once

/// The pipeline actor: cuts its share of each batch into the plan's micro-batches,
/// feeds them to the first stage, routes their labels to the last, and answers the
/// step with the share's mean loss once every stage has stepped.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <vector>

namespace actorpipe::actors {

/// `micro_batch_sizes`: the plan's, in feeding order; `batch_size`: the samples each
/// micro-batch's loss is a share of (the whole batch over all pipelines, so that the
/// gradients summed over the pipelines are the batch mean's; or the pipeline's own
/// share, for a policy whose pipelines step on their own); `first_step`: the number of
/// the pipeline's first step, which it counts on from; `to_first`, `to_last`: how
/// inputs and labels reach the first and last stage (in another process: c10d).
pipeline_actor spawn_pipeline(caf::actor_system& system, std::vector<stage_actor> stages,
                              std::vector<std::uint32_t> micro_batch_sizes, std::uint32_t batch_size,
                              std::uint64_t first_step, Route to_first = {}, Route to_last = {});

} // namespace actorpipe::actors
