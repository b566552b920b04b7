#pragma once

/// The pipeline actor: cuts its share of each batch into the plan's micro-batches,
/// feeds them to the first stage, routes their labels to the last, and answers the
/// step with the share's mean loss once every stage has stepped.

#include "protocol.hpp"

#include <caf/fwd.hpp>

#include <cstdint>
#include <vector>

namespace actorpipe::actors {

/// `micro_batch_sizes`: the plan's, in feeding order; `batch_size`: samples of the
/// whole batch over all pipelines (it scales each micro-batch's loss so that the
/// gradients summed over the pipelines are the batch mean's).
pipeline_actor spawn_pipeline(caf::actor_system& system, std::vector<stage_actor> stages,
                              std::vector<std::uint32_t> micro_batch_sizes, std::uint32_t batch_size);

} // namespace actorpipe::actors
