#pragma once

/// Turns a job into a plan: searches pipeline depth × number of pipelines ×
/// micro-batches (each fixed by the job or "auto"), and for each shape calls the
/// partitioner, mapper and scheduler plugins and prices the result with the simulator.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/plugin_registry.hpp>

namespace actorpipe {

/// The fastest plan (predicted samples/s) among the shapes that fit in memory. Plugin
/// errors come back as bad input, prefixed with the plugin's kind, name and file; a
/// job no shape of which fits is bad input naming the stage and device that overflow.
/// What a long planning search reports: the fraction done (0 to 1) and what it is doing
/// ("shape 2 of 6: 4 stages × 2 pipelines × 8 micro-batches").
using PlanProgress = std::function<void(double fraction, const std::string& doing)>;

ACTORPIPE_EXPORT Result<Plan> make_plan(const JobSpec& job, const PluginRegistry& plugins,
                                        const PlanProgress& progress = {});

/// Splits one pipeline's share of the batch into `micro_batches` sizes that differ by
/// at most one sample, larger ones first.
ACTORPIPE_EXPORT std::vector<std::uint32_t> split_batch(std::uint32_t samples, std::uint32_t micro_batches);

} // namespace actorpipe
