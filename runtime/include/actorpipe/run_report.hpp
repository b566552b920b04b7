#pragma once

/// Finished runs as programs read them: `actorpipe run --json`.

#include <actorpipe/export.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/training.hpp>

#include <string>

namespace actorpipe {

/// A finished run as `actorpipe run --json` prints it: the summary's fields beside what
/// was predicted: the step time on this machine, the plan's own (`plan_step_ms`), and
/// the plan's memory estimate of each stage's replica (`predicted_memory_bytes`), which
/// `peak_gpu_bytes` measures on GPUs.
ACTORPIPE_EXPORT std::string run_summary_to_json(const RunSummary& summary, double predicted_step_ms, const Plan& plan);

} // namespace actorpipe
