#pragma once

/// Training a planned job: the plan becomes CAF actors (a job actor, one pipeline actor
/// per pipeline, one stage actor per pipeline × stage, whose replicas across the
/// pipelines sync among themselves as the plan's sync policy says) that pass
/// micro-batches to each other and train the job's model with LibTorch.
/// No CAF or LibTorch types show here.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/tuning.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace actorpipe {

class PluginRegistry;

/// One finished step, as the progress line and metrics.jsonl see it.
struct StepMetrics {
  std::uint64_t step = 0;  ///< 1-based, over the whole run
  std::uint64_t epoch = 0; ///< 1-based: the epoch this step belongs to, as an evaluation's
  std::uint64_t steps_per_epoch = 0;
  std::uint64_t total_steps = 0;
  double loss = 0;          ///< training loss of this step's batch
  double step_ms = 0;       ///< wall time of this step
  double samples_per_s = 0; ///< since the run (or resume) began
  double eta_s = 0;         ///< until the last step, at the rate so far
};

/// An evaluation: at the end of an epoch (train.evaluate_every), every train.eval_every
/// steps, and at the run's end.
struct EvaluationMetrics {
  std::uint64_t step = 0;
  std::uint64_t epoch = 0; ///< 1-based: the epoch the last step belonged to
  double test_accuracy = 0;
  double test_loss = 0;
};

/// A job's training and test data, loaded and checked: given to `measure_profile` and
/// then to `run_training`, the files are read once instead of twice.
struct TrainingData;

/// Reads (or draws, for synthetic data) the data `job` names. A missing, truncated or
/// malformed file is an error naming the file. A data set plugin is found in `plugins`;
/// null: the default folders and the job's plan.plugin_path.
ACTORPIPE_EXPORT Result<std::shared_ptr<const TrainingData>>
load_training_data(const JobSpec& job, const PluginRegistry* plugins = nullptr);

struct RunOptions {
  std::uint64_t steps = 0;  ///< overrides train.steps when > 0
  std::uint32_t epochs = 0; ///< overrides train.epochs when > 0
  std::string output_dir;   ///< where plan.json, metrics.jsonl, trace.json and the checkpoint go
  std::string resume;       ///< a run's output folder whose checkpoint to continue from
  /// With more stage actors than cores, binds pipeline neighbours to a shared core, where
  /// a hand-off is a switch instead of a thread woken on another core (docs/running.md);
  /// false leaves placement to the operating system.
  bool pin_threads = true;
  std::shared_ptr<const TrainingData> data; ///< the job's, loaded already; else the run loads it
  /// Where the plan's sync policy (plan.sync) is found: the registry the plan was made
  /// with; null: the default folders and the job's plan.plugin_path.
  const PluginRegistry* plugins = nullptr;
  /// A stage that spends this long on one piece of its own work (a forward, a backward,
  /// an optimizer step) is stuck, and the run fails, naming it. Its thread cannot be
  /// stopped: the run then returns without waiting for it, leaving it the memory it may
  /// still use (the process should end soon after). In a run of several processes, its
  /// worker counts as lost instead. 0: no limit.
  std::chrono::milliseconds stall_timeout{std::chrono::minutes(10)};
  /// Asked after every step; once it says true, the run finishes the step already
  /// handed to the stages, writes a checkpoint there and returns, `stopped` set (an
  /// interrupt, say: `--resume` then goes on as if nothing had happened).
  std::function<bool()> stop_requested;
  std::function<void(const StepMetrics&)> on_step;
  std::function<void(const EvaluationMetrics&)> on_evaluation;
  /// A testing aid (`--inject-failure`): "STAGE:STEP" makes stage STAGE of every
  /// pipeline throw at step STEP; ":stall" or ":stall-sync" after it blocks its thread
  /// there for good, in its work or its sync round; under launch_training(), ":exit"
  /// ends its worker process and ":hang" stops it. It strikes the first attempt only.
  /// Empty: none.
  std::string inject_failure;
};

struct RunSummary {
  std::uint64_t steps = 0;           ///< steps done in all, counting those before a resume
  std::uint64_t epoch = 0;           ///< 1-based: the epoch the last step belonged to (0: no step)
  std::uint64_t epochs_finished = 0; ///< epochs whose last step was done
  double final_loss = 0;             ///< training loss of the last step
  double test_accuracy = 0;          ///< at the last evaluation
  double test_loss = 0;
  double samples_per_s = 0;  ///< training samples per second of this process's steps
  double median_step_ms = 0; ///< of this process's steps: what the plan's iteration_time_ms predicts
  bool stopped = false;      ///< ended early by RunOptions::stop_requested
  double seconds = 0;        ///< wall time of the steps (without evaluation)
  /// By stage index: the most micro-batches whose activations one of its replicas held
  /// at once (what the schedule stashes).
  std::vector<std::size_t> peak_stashed;
  /// By CUDA device index: the most bytes LibTorch's caching allocator held allocated
  /// at once during the run (what the plan's memory estimate predicts); empty on the CPU.
  std::vector<std::uint64_t> peak_gpu_bytes;
  std::string output_dir;
};

/// The cores this process may run on (its affinity mask): what the stage actors of a
/// run in it share, each pair of pipeline neighbours one core where they outnumber them.
ACTORPIPE_EXPORT std::size_t usable_core_count();

/// The step time the simulator predicts for `plan` run on this machine: the plan's own,
/// unless its stage actors outnumber the cores. Then pipeline neighbours take turns on
/// the core a run binds them to (docs/running.md, Cores), and it simulates that. On
/// emulated devices only, the modelled cluster's, with the emulated stragglers: what
/// the run measures in modelled time.
ACTORPIPE_EXPORT Result<double> predicted_step_ms(const JobSpec& job, const Plan& plan);

/// The checkpoint a run writes in its output folder, and RunOptions::resume reads.
inline constexpr const char* checkpoint_file = "checkpoint.pt";
/// The line per step and per evaluation a run writes in its output folder.
inline constexpr const char* metrics_file = "metrics.jsonl";
/// metrics.jsonl as a table, rewritten at each checkpoint and at the run's end.
inline constexpr const char* metrics_table_file = "metrics.csv";
/// With output.tensorboard: the run's metrics as TensorBoard reads them (a name that
/// holds "tfevents"), growing with metrics.jsonl.
inline constexpr const char* tensorboard_events_file = "events.out.tfevents.actorpipe";

/// Trains `job` (which must name a zoo model) as `plan` says. Writes to
/// `options.output_dir`: metrics.jsonl (a line per step and per evaluation) and
/// metrics.csv, with output.tensorboard a TensorBoard event file, trace.json (a Perfetto
/// track per stage actor, counter tracks of the loss, samples/s and memory) and
/// checkpoint.pt (atomically, at each evaluation and at the end). A failing actor ends
/// the run with an error naming the stage and micro-batch.
ACTORPIPE_EXPORT Result<RunSummary> run_training(const JobSpec& job, const Plan& plan, const RunOptions& options);

/// What export_model() wrote.
struct ExportedModel {
  std::string module_file;     ///< the TorchScript module
  std::string state_dict_file; ///< its parameters and buffers by name, as torch.save writes a state_dict
  std::uint64_t step = 0;      ///< of the checkpoint it holds
  std::size_t parameters = 0;
  std::size_t buffers = 0;
};

/// Writes the model that the run in `run_dir` trained, as its checkpoint holds it, back
/// out: a run of an imported TorchScript model (model.zoo = "torchscript", which records
/// its file in model.json) becomes that module with the trained parameters and buffers,
/// saved as TorchScript to `out`, and the same tensors under the module's names as a
/// dict beside it (`out` with .state_dict.pt for .pt), which torch.load reads and
/// load_state_dict takes. Both atomically; bad input names the file at fault (no record,
/// a model file changed since the run, a checkpoint of another model).
ACTORPIPE_EXPORT Result<ExportedModel> export_model(const std::string& run_dir, const std::string& out);

/// The bounds measure_profile() holds its options to: what a caller gives beyond them is
/// bad input, not a measurement that never ends or a count that wrapped.
inline constexpr std::uint64_t max_measured_batch = std::uint64_t{1} << 24; ///< as train.batch_size
inline constexpr std::uint64_t max_measure_passes = 100'000;                ///< warm-up or timed
inline constexpr std::uint64_t max_measure_threads = 4096;

struct MeasureOptions {
  /// Where to measure (`actorpipe profile --device`): where the job's stages would
  /// compute (its cluster's first CUDA device where this machine has that GPU, else the
  /// CPU), the CPU, or CUDA device `cuda_index` of this machine.
  enum class On { job, cpu, cuda };
  On on = On::job;
  int cuda_index = 0;
  std::uint32_t batch_size = 0; ///< samples per measurement; 0: the job's batch
  /// Untimed passes over the model first, at least; more until the last 3 agree within
  /// 5% (TorchScript optimises a graph only after its first runs), up to 30. 0: none.
  std::uint32_t warmup = 2;
  std::uint32_t repeats = 5; ///< timed passes, at least 1; each unit's median counts
  /// LibTorch intra-op threads to measure with; 0: one device's share of this
  /// machine's cores (cores / devices of the job's cluster, at least one), as a run
  /// with one stage actor per device gives each.
  int threads = 0;
  /// Copies of the model kept training on the other cores while the units are timed,
  /// as the other device shares compute in a run; -1: enough to fill every core
  /// (cores / threads − 1).
  int load = -1;
  std::shared_ptr<const TrainingData> data; ///< the job's, loaded already; else it is loaded
  /// Where a data set plugin (data.plugin) is found when the data is loaded here; null:
  /// the default folders and the job's plan.plugin_path.
  const PluginRegistry* plugins = nullptr;
  /// Called after each pass over the model with (passes done, passes in all).
  std::function<void(std::size_t, std::size_t)> on_pass;
};

/// The profile of the job's zoo model measured on this machine's CPU or one of its GPUs
/// (`options.on`), in the job's precision, at `options.batch_size` samples of the job's
/// data: per block and sub-block, forward and backward time (median of the repeats, each
/// unit fed the real output of the units before it; on a GPU timed with CUDA events),
/// the input gradient's share of each backward (from as many passes again that run the
/// halves apart: model_profile.hpp), output and parameter bytes, and what each unit keeps for its backward and holds
/// while it runs, as the device's allocator counts them; on the CPU with `options.load` copies of the model busy on the
/// other cores meanwhile.
ACTORPIPE_EXPORT Result<ModelProfile> measure_profile(const JobSpec& job, const MeasureOptions& options);

struct TuneOptions {
  std::string scratch_dir; ///< the short runs write under it, and it is removed after
  std::shared_ptr<const TrainingData> data;
  const PluginRegistry* plugins = nullptr; ///< the registry `planned` was made with
  /// Called after each measured setting with (settings done, settings in all, it).
  std::function<void(std::size_t, std::size_t, const TunedSetting&)> on_setting;
  std::function<bool()> stop_requested; ///< asked between settings and by each run
};

/// plan.tune = "profile": runs the planner's `plan.tune_candidates` fastest shapes that
/// fit (`planned.tried`) for `plan.tune_steps` steps each (the first two untimed), and
/// returns the plan of the shape that measured the most samples/s, with the report.
/// Bad input when the job leaves no shape open ("auto") or `planned` tried only one.
ACTORPIPE_EXPORT Result<std::pair<Plan, TuneReport>> tune_plan(const JobSpec& job, const Plan& planned,
                                                               const TuneOptions& options);

} // namespace actorpipe
