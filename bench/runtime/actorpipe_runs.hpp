#pragma once

/// actorpipe as the bench runs it: `actorpipe profile`, `plan` and `run` in processes of
/// their own (so that no runner inherits another's threads or heap), what a run wrote
/// read back, and the tiny job whose hops the bench times.

#include "bench_support.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace actorpipe::bench {

struct Cli {
  std::filesystem::path actorpipe, scratch;
  std::filesystem::path profile; ///< measured by `actorpipe profile`, given to every run of the default job

  struct Outcome {
    std::vector<double> step_ms; ///< of the timed steps
    double predicted_ms = 0;     ///< the run's predicted step (its --json predicted_step_ms)
    std::filesystem::path trace;
  };

  /// Measures the profile of `job` with `sets` into `profile`, which later runs use.
  void measure_profile(const std::string& job, const std::vector<std::string>& sets = {});

  /// The step `actorpipe run` predicts for `job` with `sets` and the profile: the plan's,
  /// or on this machine's cores when its stage actors share them.
  double predict(const std::string& job, std::vector<std::string> sets) const;

  /// `actorpipe run` of `job` with `sets` (`key=value`), the profile, `steps` timed steps
  /// after the warm-up and `flags`: more of its flags, such as --no-pin. `command` may
  /// be another that trains as `run` does: "launch --nprocs 2".
  Outcome run(const std::string& job, std::vector<std::string> sets, std::uint64_t steps, const std::string& flags = "",
              const std::string& command = "run") const;

private:
  /// Runs `command` and returns its stdout, ending the bench with its stderr when it fails.
  std::string shell(const std::string& command) const;
  /// `actorpipe run` of `job` with `sets` and the profile into `out`: its --json summary.
  nlohmann::json run_json(const std::string& job, std::vector<std::string> sets, std::uint64_t steps,
                          const std::filesystem::path& out, const std::string& flags,
                          const std::string& command = "run") const;
};

/// Median message latency of forward and of backward hops in a run's trace (µs): for
/// each micro-batch, from the end of its compute on one stage to the start of its
/// compute on the next (forward) or previous (backward) stage of the same pipeline.
struct HopLatency {
  double forward_us = 0, backward_us = 0;
};

HopLatency hop_latency(const std::filesystem::path& trace_file);

/// A job for the tiny MLP on `stages` CPU devices: one micro-batch of 4 samples.
std::string hop_job(std::size_t stages);

} // namespace actorpipe::bench
