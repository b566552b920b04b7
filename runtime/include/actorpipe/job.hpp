#pragma once

/// A job: what to train, on what, and how to plan it, as read from a TOML job file.
///
/// Each Options struct mirrors one section of the job file; its members are named
/// exactly as the keys (docs/config.md lists them with their defaults).

#include <actorpipe/export.hpp>
#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/cuda_graphs.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/plugin.hpp>
#include <actorpipe/option_names.hpp>
#include <actorpipe/precision.hpp>
#include <actorpipe/recompute.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace actorpipe {

/// [job]
struct JobOptions {
  std::string name = "job";
  std::string description;
  std::uint64_t seed = 0;
};

/// data.dataset: what a run trains on.
enum class Dataset {
  fashion_mnist, ///< "fashion-mnist": the IDX files of data.path (the Debian package's by default)
  synthetic,     ///< random samples of data.shape with data.classes labels
  text,          ///< "text": a file of characters, for language models (gpt)
  tokens,        ///< "tokens": a flat binary file of token ids (data.token_type), for language models
  npy,           ///< "npy": a folder of NumPy arrays (inputs.npy, labels.npy, and test_ ones)
  plugin,        ///< "plugin": the arrays of the data set plugin data.plugin
};
template <> struct OptionNames<Dataset> {
  static constexpr std::array values{std::pair{Dataset::fashion_mnist, std::string_view("fashion-mnist")},
                                     std::pair{Dataset::synthetic, std::string_view("synthetic")},
                                     std::pair{Dataset::text, std::string_view("text")},
                                     std::pair{Dataset::tokens, std::string_view("tokens")},
                                     std::pair{Dataset::npy, std::string_view("npy")},
                                     std::pair{Dataset::plugin, std::string_view("plugin")}};
};

/// data.token_type: how wide each token id of a "tokens" file is (little-endian,
/// unsigned), as GPT-style data pipelines write them with NumPy.
enum class TokenType { uint16, uint32 };
template <> struct OptionNames<TokenType> {
  static constexpr std::array values{std::pair{TokenType::uint16, std::string_view("uint16")},
                                     std::pair{TokenType::uint32, std::string_view("uint32")}};
};

/// train.optimizer.
/// adamw: Adam with weight decay applied to the weights apart from the gradient (decoupled),
/// as torch.optim.AdamW.
enum class Optimizer { sgd, adam, adamw };
template <> struct OptionNames<Optimizer> {
  static constexpr std::array values{std::pair{Optimizer::sgd, std::string_view("sgd")},
                                     std::pair{Optimizer::adam, std::string_view("adam")},
                                     std::pair{Optimizer::adamw, std::string_view("adamw")}};
};

/// train.lr_schedule: how the learning rate moves over a run's steps after its
/// warm-up (train.warmup_steps, over which it rises linearly to train.lr).
enum class LrSchedule {
  constant, ///< train.lr throughout
  linear,   ///< down in a straight line to 0 at the run's last step
  cosine,   ///< down along half a cosine to 0 at the run's last step
};
template <> struct OptionNames<LrSchedule> {
  static constexpr std::array values{std::pair{LrSchedule::constant, std::string_view("constant")},
                                     std::pair{LrSchedule::linear, std::string_view("linear")},
                                     std::pair{LrSchedule::cosine, std::string_view("cosine")}};
};

/// train.buffers: what the pipelines' replicas of a buffer (BatchNorm's running
/// statistics) hold after each step. Integer buffers (BatchNorm's count of batches)
/// are broadcast either way.
enum class BufferSync {
  broadcast, ///< the first pipeline's, as DistributedDataParallel does
  average,   ///< the mean over the pipelines
};
template <> struct OptionNames<BufferSync> {
  static constexpr std::array values{std::pair{BufferSync::broadcast, std::string_view("broadcast")},
                                     std::pair{BufferSync::average, std::string_view("average")}};
};

/// plan.tune: how `run` chooses among the shapes "auto" leaves open.
enum class Tuning {
  simulate, ///< the simulator's fastest
  profile,  ///< short measured runs of the simulator's fastest few
};
template <> struct OptionNames<Tuning> {
  static constexpr std::array values{std::pair{Tuning::simulate, std::string_view("simulate")},
                                     std::pair{Tuning::profile, std::string_view("profile")}};
};

/// model.zoo: the built-in model a job trains.
enum class ZooModel {
  none, ///< "" (absent): the job can be planned, not run
  mlp,
  cnn,
  resnet,
  gpt,
  torchscript, ///< a scripted nn.Sequential in model.file
};
template <> struct OptionNames<ZooModel> {
  static constexpr std::array values{std::pair{ZooModel::none, std::string_view("")},
                                     std::pair{ZooModel::mlp, std::string_view("mlp")},
                                     std::pair{ZooModel::cnn, std::string_view("cnn")},
                                     std::pair{ZooModel::resnet, std::string_view("resnet")},
                                     std::pair{ZooModel::gpt, std::string_view("gpt")},
                                     std::pair{ZooModel::torchscript, std::string_view("torchscript")}};
};

/// [model]
struct ModelOptions {
  ZooModel zoo = ZooModel::none;
  std::string file; ///< the TorchScript file of zoo = "torchscript"
  std::uint32_t layers =
      0; ///< hidden layers (mlp), residual blocks (resnet), transformer blocks (gpt); 0: the model's default
  std::uint32_t width = 0;    ///< hidden units (mlp), channels (cnn, resnet), embedding (gpt); 0: the model's default
  std::uint32_t heads = 4;    ///< attention heads (gpt)
  std::uint32_t context = 64; ///< tokens per sample (gpt)
  /// Profile file, resolved against the job file's folder. Optional for a zoo model:
  /// `run` then measures one (`actorpipe profile`).
  std::string profile;
  std::string profile_format = "auto";  ///< "auto", "toml" or "pipedream"
  std::uint32_t profile_batch_size = 0; ///< samples a PipeDream profile was measured with; required for one
};

/// [data]
struct DataOptions {
  Dataset dataset = Dataset::synthetic;
  /// Folder (fashion-mnist, npy) or file (text, tokens) of the data set, or what a
  /// plugin is told; empty: the Debian package's folder for fashion-mnist.
  std::string path;
  std::string plugin;                  ///< the data set plugin of `dataset = "plugin"`
  PluginOptions options;               ///< [data.options]: the data set plugin's settings
  std::uint32_t samples = 4096;        ///< training samples of synthetic data (test: a quarter)
  std::vector<std::int64_t> shape{32}; ///< one synthetic sample's shape
  /// Synthetic labels (0: 10); npy and plugin data: the model's classes, which every
  /// label must be below (0: the largest label + 1).
  std::uint32_t classes = 0;
  TokenType token_type = TokenType::uint16;
  /// tokens, and token ids of npy and plugin data: ids run below this (the model's
  /// vocabulary); 0: the largest id + 1.
  std::uint32_t vocabulary = 0;
  bool shuffle = true;
  std::uint64_t seed = 0;
};

/// The most steps and epochs a run takes (train.steps, train.epochs, `--steps`,
/// `--epochs`): far beyond any real run, and a bound on what a typo asks for.
inline constexpr std::uint64_t max_steps = std::uint64_t{1} << 40;
inline constexpr std::uint32_t max_epochs = std::uint32_t{1} << 20;

/// The longest job.name: it names the run's folder, which a file system bounds.
inline constexpr std::size_t max_job_name = 128;

/// [train]
struct TrainOptions {
  std::uint32_t batch_size = 64; ///< samples per iteration, all pipelines together
  std::uint32_t epochs = 1;
  std::uint64_t steps = 0; ///< 0: run whole epochs
  /// The run evaluates and writes a checkpoint after every `evaluate_every`-th epoch and
  /// at its end; in between, steps flow across epoch ends without draining the
  /// pipelines (worth it when an epoch is a few steps).
  std::uint32_t evaluate_every = 1;
  /// Also evaluates and writes a checkpoint after every this many steps (counted from
  /// the run's first, so a resumed run keeps the rhythm); 0: by epochs alone.
  std::uint64_t eval_every = 0;
  Optimizer optimizer = Optimizer::sgd;
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  LrSchedule lr_schedule = LrSchedule::constant;
  std::uint64_t warmup_steps = 0;
  /// Clips the gradient by its norm over every parameter of the model (all stages; the
  /// pipelines' reduced gradient), as torch.nn.utils.clip_grad_norm_; 0: no clipping.
  double clip_norm = 0.0;
  BufferSync buffers = BufferSync::broadcast;
  /// Whether the process keeps the memory it frees for reuse, as a caching allocator
  /// does, rather than giving it back to the operating system after every
  /// micro-batch. Process-wide, from the first run or profile that asks for it.
  bool retain_memory = true;
  Precision precision = Precision::fp32;
  /// Which stages on CUDA devices replay their forward and backward of a micro-batch as
  /// CUDA graphs, captured in the run's first steps, instead of launching every operator
  /// from the host (train/graphed_passes.hpp). Stages that draw random numbers (dropout)
  /// or recompute compute eagerly whatever it says.
  CudaGraphs cuda_graphs = CudaGraphs::shared_gpus;
};

/// `plan.stages`, `plan.pipelines` and `plan.micro_batches` may be "auto": the planner
/// searches them.
inline constexpr std::uint32_t auto_count = 0;
/// plan.scheduler = "auto": the planner simulates every scheduler it finds and keeps
/// the fastest plan that fits, as it does for shapes.
inline constexpr const char* auto_scheduler = "auto";

/// Bytes of gradients and optimizer state per byte of parameters under `train`: 1 for
/// SGD (the gradient), 2 with momentum, 3 for Adam and AdamW (gradient and two moments).
inline double optimizer_state_factor(const TrainOptions& train) {
  if (train.optimizer == Optimizer::adam || train.optimizer == Optimizer::adamw) return 3.0;
  return train.momentum > 0 ? 2.0 : 1.0;
}

/// [plan]
struct PlanOptions {
  std::string partitioner = "autopipe";
  std::string mapper = "hetero";
  std::string scheduler = "1f1b";
  std::string sync = "allreduce";
  std::string schedule_file; ///< a schedule file to run instead of the scheduler's
  /// What each stage keeps between a micro-batch's forward and backward: one value for
  /// every stage, or one per stage (plan.stages then fixed). Empty (unset): none, unless
  /// no plan fits without it or memory binds the plan found; then the planner tries
  /// selective, then full, on every stage, and keeps the fastest plan that fits.
  std::vector<Recompute> recompute{};
  std::uint32_t stages = auto_count;
  std::uint32_t pipelines = auto_count;
  std::uint32_t micro_batches = auto_count;
  Tuning tune = Tuning::simulate;
  std::uint32_t tune_candidates = 3;    ///< with tune = "profile": shapes measured (at most Plan::tried_shapes_kept)
  std::uint32_t tune_steps = 8;         ///< with tune = "profile": steps each is run for (the first two not timed)
  bool sub_blocks = true;               ///< may stages start or end inside a block
  double action_overhead_ms = 0.1;      ///< fixed cost of every forward or backward (launches, messages)
  std::vector<std::string> plugin_path; ///< resolved against the job file's folder
  /// [plan.options.NAME]: settings passed to the plugin called NAME.
  std::map<std::string, PluginOptions> options;
};

/// [simulate]
struct SimulateOptions {
  std::uint32_t iterations = 10;
  std::string stragglers; ///< a straggler spec (docs/simulate.md); empty: none
  std::string trace;      ///< write a Perfetto trace here; empty: none
};

/// [emulation]: devices of kind "emulated" compute with LibTorch on this machine's CPU,
/// each action padded to the time the device's model says (docs/running.md).
struct EmulationOptions {
  /// Wall time per modelled time: an action modelled at t ms takes dilation × t ms, so
  /// that many emulated devices sharing a few cores still finish within their model.
  double dilation = 1;
  /// A straggler spec (docs/simulate.md), acting on the emulated devices as `simulate`
  /// has it act on its devices; empty: none.
  std::string stragglers;
};

/// [output]
struct OutputOptions {
  std::string dir = "runs/{job}";   ///< {job} is replaced by job.name
  std::uint64_t trace_steps = 1000; ///< trace.json keeps the spans of this many latest steps; 0: all
  /// Also writes the metrics as a TensorBoard event file in the run's folder
  /// (`tensorboard --logdir runs` shows every run).
  bool tensorboard = false;
};

struct ACTORPIPE_EXPORT JobSpec {
  std::string file; ///< the job file this was read from
  JobOptions job;
  ModelOptions model;
  DataOptions data;
  TrainOptions train;
  PlanOptions plan;
  SimulateOptions simulate;
  EmulationOptions emulation;
  OutputOptions output;
  std::string cluster_file; ///< where [cluster] came from, when it named a file
  ClusterSpec cluster;
  ModelProfile profile; ///< loaded from model.profile
  /// Where each key was set ("plan.partitioner" → job.toml:14:15, or "--set ..."),
  /// so that errors found later, such as an unknown plugin, can point at it.
  std::map<std::string, SourcePlace> origins;

  /// Where `key` was set; the job's file where it was not (a default).
  SourcePlace place_of(const std::string& key) const;
  /// "FILE:LINE:COL: key: " for a key that was set, or "FILE: key: " for a default.
  std::string where(const std::string& key) const;
};

/// Reads a job file, applies `overrides` ("key.path=value", as from --set; the value is
/// TOML, or a bare string) and loads the cluster and profile it names. Every error names
/// its place as "FILE:LINE:COL: key.path: what is wrong" (or "--set: key: ..." for an
/// override).
ACTORPIPE_EXPORT Result<JobSpec> load_job(const std::string& path, const std::vector<std::string>& overrides = {});

/// Reads a cluster description (the keys of a job's [cluster] table, at top level).
ACTORPIPE_EXPORT Result<ClusterSpec> load_cluster(const std::string& path);

} // namespace actorpipe
