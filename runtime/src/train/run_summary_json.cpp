/// run_summary_to_json(): what `actorpipe run --json` prints and a script's
/// actorpipe.run() returns.

#include <actorpipe/run_report.hpp>

#include <nlohmann/json.hpp>

namespace actorpipe {

std::string run_summary_to_json(const RunSummary& summary, double predicted_step_ms, const Plan& plan) {
  std::vector<std::uint64_t> predicted_memory;
  for (const StagePlan& stage : plan.stages)
    predicted_memory.push_back(stage.estimate.memory_bytes);
  const nlohmann::ordered_json out{{"steps", summary.steps},
                                   {"epoch", summary.epoch},
                                   {"epochs_finished", summary.epochs_finished},
                                   {"final_loss", summary.final_loss},
                                   {"test_accuracy", summary.test_accuracy},
                                   {"test_loss", summary.test_loss},
                                   {"samples_per_s", summary.samples_per_s},
                                   {"median_step_ms", summary.median_step_ms},
                                   {"predicted_step_ms", predicted_step_ms},
                                   {"plan_step_ms", plan.iteration_time_ms},
                                   {"seconds", summary.seconds},
                                   {"stopped", summary.stopped},
                                   {"peak_stashed", summary.peak_stashed},
                                   {"peak_gpu_bytes", summary.peak_gpu_bytes},
                                   {"predicted_memory_bytes", predicted_memory},
                                   {"output_dir", summary.output_dir}};
  return out.dump(2) + "\n";
}

} // namespace actorpipe
