#pragma once

/// Turns a job into a plan: micro-batching, partition, mapping and the estimates that
/// let plans be compared.

#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/plugin_registry.hpp>

namespace actorpipe {

/// Plans `job` with the partitioner and mapper it names, loaded from `plugins`.
/// Plugin errors come back as bad input, prefixed with the plugin's kind, name and file.
Result<Plan> make_plan(const JobSpec& job, const PluginRegistry& plugins);

/// Splits one pipeline's share of the batch into `micro_batches` sizes that differ by
/// at most one sample, larger ones first.
std::vector<std::uint32_t> split_batch(std::uint32_t samples, std::uint32_t micro_batches);

} // namespace actorpipe
