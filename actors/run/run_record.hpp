#pragma once

/// What a run leaves for its users besides the parameters, made from what it recorded:
/// the Perfetto trace of its stage actors' spans (also of a run a stuck stage ended),
/// and the metrics file a resumed run starts from.

#include "stage_activity.hpp"
#include "stage_trace.hpp"

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/plan.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace actorpipe::actors {

/// What the run stood at when a step ended: the trace's counter tracks.
struct StepCounters {
  double at_us = 0; ///< since the run's origin, in wall time as the spans are
  double loss = 0;
  double samples_per_s = 0;
  double memory_bytes = 0; ///< this process's resident memory (the GPUs' peak, on GPUs)
};

/// The run's Perfetto trace: a track per stage actor, under a process per pipeline; in
/// a run of several processes, under a process per worker (`placement`), as each ran;
/// and under a process of its own, the counter tracks of `counters` (loss, samples/s,
/// memory). Times are modelled time: wall time × `time_scale`.
std::string trace_of(const std::vector<StageTrace>& traces, const Plan& plan, const ClusterSpec& cluster,
                     double time_scale, const std::vector<std::vector<std::uint64_t>>* placement,
                     const std::vector<StepCounters>& counters = {});

/// Copies of `traces` as they are now, where a stage's thread is stuck at its work and
/// its actor never ends: each stage that `activities` (p · S + s, as the traces) shows
/// busy for `limit` or longer at `now` gains a `stuck` span from when it began its work
/// to `now`, with the step it was at.
std::vector<StageTrace> traces_of_stuck_run(const std::vector<StageTrace>& traces,
                                            const std::deque<StageActivity>& activities, Clock::time_point origin,
                                            Clock::time_point now, std::chrono::milliseconds limit);

/// The lines of a run's metrics.jsonl up to and including step `step`: what a resume
/// from a checkpoint at that step keeps. A line cut short by a killed process, and the
/// lines of steps after the checkpoint, are dropped. No file: nothing.
std::string metrics_up_to(const std::string& path, std::uint64_t step);

} // namespace actorpipe::actors
