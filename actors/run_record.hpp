#pragma once

/// What a run leaves for its users besides the parameters, made from what it recorded:
/// the Perfetto trace of its stage actors' spans, and the metrics file a resumed run
/// starts from.

#include "stage_trace.hpp"

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/plan.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe::actors {

/// The run's Perfetto trace: a track per stage actor, under a process per pipeline; in
/// a run of several processes, under a process per worker (`placement`), as each ran.
/// Times are modelled time: wall time × `time_scale`.
std::string trace_of(const std::vector<StageTrace>& traces, const Plan& plan, const ClusterSpec& cluster,
                     double time_scale, const std::vector<std::vector<std::uint64_t>>* placement);

/// The lines of a run's metrics.jsonl up to and including step `step`: what a resume
/// from a checkpoint at that step keeps. A line cut short by a killed process, and the
/// lines of steps after the checkpoint, are dropped. No file: nothing.
std::string metrics_up_to(const std::string& path, std::uint64_t step);

} // namespace actorpipe::actors
