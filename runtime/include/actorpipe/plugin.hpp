#pragma once

/// The plugin ABI: what a partitioner, mapper, scheduler, sync-policy or data set module
/// exports.
///
/// A module exports two `extern "C"` symbols, both written by ACTORPIPE_PLUGIN:
///   - `actorpipe_plugin_info`: a PluginInfo the loader reads and checks (ABI version,
///     kind, name) before it calls anything in the module;
///   - `actorpipe_plugin_create`: the factory, called only when the info is right.
/// The loader reads the info after `dlopen`, which has run the module's static
/// initialisers already: a plugin keeps them trivial (ACTORPIPE_PLUGIN needs none).
/// The interfaces take and return value types only. Exceptions never cross the module
/// boundary: the macro wraps the plugin's class so that every call returns an Error
/// instead of throwing. Modules and the runtime must be built with the same compiler
/// and standard library; the ABI version guards the layout of everything here.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/data_array.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/export.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/recompute.hpp>
#include <actorpipe/schedule.hpp>
#include <actorpipe/version.hpp>

#include <charconv>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace actorpipe {

/// Read by the loader before the module's factory is called. Plain C so that the
/// loader can read it from any module, whatever it was built with.
struct PluginInfo {
  std::uint32_t abi_version;
  const char* kind; ///< "partitioner", "mapper", "scheduler", "sync" or "dataset"
  const char* name; ///< unique among loaded plugins; what configs name
  const char* version;
  const char* description; ///< one line
};

inline constexpr const char* plugin_info_symbol = "actorpipe_plugin_info";
inline constexpr const char* plugin_factory_symbol = "actorpipe_plugin_create";

/// A plugin's own settings, from `[plan.options.NAME]` in the job file. Values are
/// the TOML values as text; the plugin parses them and rejects keys it does not know.
using PluginOptions = std::map<std::string, std::string>;

/// `value` as the shortest text that reads back as it: 0.9, not 0.90000000000000002 or
/// 0.900000. How option values and their bounds are written.
inline std::string number_text(double value) {
  char buffer[32];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

/// An error naming the first option that is not in `known` (plugins call this first).
inline Status check_options(const PluginOptions& options, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : options) {
    bool found = false;
    for (std::string_view k : known)
      found = found || key == k;
    if (!found) {
      std::string list;
      for (std::string_view k : known)
        list += (list.empty() ? "" : ", ") + std::string(k);
      return Error::bad_input("unknown option '" + key + "'" +
                              (list.empty() ? " (this plugin takes none)" : " (known: " + list + ")"));
    }
  }
  return Ok{};
}

/// Option `key` as a number in [min, max], or `fallback` when it is not set.
inline Result<double> number_option(const PluginOptions& options, const std::string& key, double fallback, double min,
                                    double max) {
  const auto it = options.find(key);
  if (it == options.end()) return fallback;
  // from_chars, not stod: a decimal point is '.' whatever the host's locale says.
  double value = 0;
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    return Error::bad_input("option '" + key + "': '" + text + "' is not a number");
  if (!(value >= min && value <= max))
    return Error::bad_input("option '" + key + "': " + it->second + " is outside [" + number_text(min) + ", " +
                            number_text(max) + "]");
  return value;
}

/// Option `key` as a whole number in [min, max], or `fallback` when it is not set.
inline Result<std::uint64_t> count_option(const PluginOptions& options, const std::string& key, std::uint64_t fallback,
                                          std::uint64_t min, std::uint64_t max) {
  auto value =
      number_option(options, key, static_cast<double>(fallback), static_cast<double>(min), static_cast<double>(max));
  if (!value) return std::move(value).error();
  if (*value != static_cast<double>(static_cast<std::uint64_t>(*value)))
    return Error::bad_input("option '" + key + "': " + options.at(key) + " is not a whole number");
  return static_cast<std::uint64_t>(*value);
}

/// Option `key` as one of `allowed`, or `fallback` when it is not set.
inline Result<std::string> choice_option(const PluginOptions& options, const std::string& key, std::string fallback,
                                         std::initializer_list<std::string_view> allowed) {
  const auto it = options.find(key);
  if (it == options.end()) return fallback;
  std::string list;
  for (std::string_view a : allowed) {
    if (a == it->second) return it->second;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return Error::bad_input("option '" + key + "': '" + it->second + "' is not one of " + list);
}

/// Everything a partitioner or mapper may need to know about the job.
struct PlanContext {
  const ModelProfile& profile;
  const ClusterSpec& cluster;
  std::size_t stages = 1;
  std::size_t pipelines = 1;
  std::uint32_t batch_size = 1;                   ///< all pipelines together
  std::vector<std::uint32_t> micro_batch_sizes{}; ///< one pipeline's, in order
  std::string scheduler{};
  /// The scheduler's chunks: with chunks > 1, `stages` counts virtual stages, stages /
  /// chunks devices per pipeline hold them (Schedule::place_of) and a partitioner cuts
  /// every virtual stage; the mapper is asked for the devices alone.
  Chunking chunking{};
  bool sub_blocks = true;        ///< whether cuts inside blocks are allowed
  double optimizer_factor = 1;   ///< bytes of gradients and optimizer state per parameter byte
  double action_overhead_ms = 0; ///< fixed cost of every forward or backward
  /// What every stage recomputes (plan.recompute, or what the planner tries where it is
  /// unset): what the stages keep, and what their backwards cost. Where a job lists
  /// another for some stages, none: the plan's simulation judges it.
  Recompute recompute = Recompute::none;
  /// Where the previous round's mapper placed each stage: the speed of its slowest
  /// replica, the memory of its smallest device, and every device, placement[p][s]
  /// (so that a partitioner can price its cuts over the links they will cross, with
  /// IterationModel). Empty on the first round, before any mapping.
  std::vector<double> stage_speeds{};
  std::vector<std::uint64_t> stage_memory{};
  std::vector<std::vector<DeviceId>> placement{};
  PluginOptions options{};
  /// A long search reports the fraction of it done (0 to 1), now and then: the planner
  /// shows it to a user who would otherwise wait on a silent terminal. May be empty.
  std::function<void(double)> progress{};

  void report(double fraction) const {
    if (progress) progress(fraction);
  }
};

/// Where the model is cut: stages + 1 cuts, the first {0, 0}, the last
/// {blocks.size(), 0}, strictly increasing.
struct Partition {
  std::vector<Cut> cuts;
  /// Whether memory, not time, placed the cuts: the split that balances the stages'
  /// time best does not fit their devices. The planner then also tries recomputing,
  /// which frees memory for that balance, where the job leaves it unset.
  bool memory_bound = false;
};

/// Devices for every stage of every pipeline: devices[p][s].
struct Mapping {
  std::vector<std::vector<DeviceId>> devices;
};

/// What a scheduler is asked for: one pipeline's iteration. Times are per sample on
/// the stage's slowest device, so a scheduler can weigh start-up against overheads.
/// With chunks (as the scheduler's chunking() said), `stages` counts devices and the
/// times are per virtual stage (stages × chunks of them, in model order), the sends
/// per boundary between virtual stages.
struct ScheduleRequest {
  std::size_t stages = 1;
  Chunking chunking{};
  std::vector<std::uint32_t> micro_batch_sizes;
  std::vector<double> stage_forward_ms; ///< per sample, beyond the fixed part (StageFigures)
  std::vector<double> stage_backward_ms;
  std::vector<double> stage_forward_fixed_ms; ///< per micro-batch, whatever its size
  std::vector<double> stage_backward_fixed_ms;
  /// Of each stage's backward, what a split backward's I takes (W the rest): as the
  /// profile measured, or half (model_profile.hpp).
  std::vector<double> stage_input_gradient_share;
  std::vector<double> send_ms;   ///< per sample, from stage s to s + 1 (stages − 1 entries)
  double action_overhead_ms = 0; ///< fixed cost of every forward or backward
  PluginOptions options{};
};

/// What a sync policy is asked for: who averages with whom in one round of one stage.
struct SyncRequest {
  std::size_t stage = 0;
  std::size_t pipelines = 1;
  std::uint64_t round = 0;        ///< the step (from 1); 0 before the run, to learn the kind and its settings
  std::vector<double> arrival_ms; ///< when each pipeline's stage became ready
  PluginOptions options{};
};

/// How the group scheduler gathers the pipelines that ask to sync a stage after a
/// local step (SyncRound::Kind::scheduled_averaging, SDPipe's central scheduling). The
/// window opens at the first asker; a lone asker's window grows, a group's shrinks.
struct GroupScheduling {
  double window_ms = 1; ///< the first window
  double min_window_ms = 0.01;
  double max_window_ms = 10;   ///< a lone asker still alone at this window syncs alone
  double grow = 2;             ///< a lone asker's window × this
  double shrink = 0.9;         ///< the window × this after a group formed
  std::size_t pairs_above = 8; ///< more askers than this form pairs
  /// At least every this many rounds (per stage), a round that waits for everyone
  /// and, with the groups since all were last connected, connects every pipeline; 0:
  /// no such rounds.
  std::size_t force_every = 10;
  /// Whether a pipeline computes its next step while its group forms and averages
  /// (the change added at that step's end); false: it waits for the answer first, so
  /// every step starts from the averaged parameters.
  bool overlap = true;
};

/// How one round of synchronisation goes.
struct SyncRound {
  enum class Kind : std::uint8_t {
    allreduce_gradients, ///< average gradients in every group before the step
    average_parameters,  ///< average parameters in every group after the step
    elastic,             ///< move parameters towards a centre variable
    /// Asynchronous: every pipeline steps on its own batches; after each local step
    /// its stage asks the run's group scheduler (`scheduling`), whose groups average
    /// their parameters. Asked once per stage, as round 0, before the run starts.
    scheduled_averaging,
    /// Asynchronous: a server per stage owns the weights and its optimizer; after
    /// each backward a stage pushes its gradient there and pulls the weights back,
    /// taking no step of its own. `staleness` bounds how far ahead a pipeline may run.
    /// Asked once per stage, as round 0, before the run starts.
    parameter_server,
    /// Asynchronous elastic averaging (AvgPipe's): every pipeline steps on its own
    /// batches; every `period` of its own steps each of its stages moves towards the
    /// stage's centre variable and the centre towards it, at rate `alpha`, while the
    /// pipeline computes its next step. Asked once per stage, as round 0.
    elastic_asynchronous,
  };
  /// `staleness` for no bound: the server applies each push as it comes.
  static constexpr std::uint64_t unbounded = ~std::uint64_t{0};

  Kind kind = Kind::allreduce_gradients;
  std::vector<std::vector<std::size_t>> groups; ///< disjoint sets of pipelines
  double alpha = 0;                             ///< elastic moving rate, when kind is elastic
  GroupScheduling scheduling{};                 ///< when kind is scheduled_averaging
  /// When kind is parameter_server: 0, synchronous (the server sums one push of every
  /// pipeline with work, steps once and answers them all); k > 0, each push applied
  /// as it comes, a pipeline answered only while at most k pushes ahead of the
  /// slowest pipeline with work (stale synchronous parallel).
  std::uint64_t staleness = unbounded;
  std::uint64_t period = 1; ///< when kind is elastic_asynchronous
};

/// Pipelines 0 … n − 1: the one group of a round that syncs every pipeline.
inline std::vector<std::size_t> all_pipelines(std::size_t n) {
  std::vector<std::size_t> group(n);
  for (std::size_t p = 0; p < n; ++p)
    group[p] = p;
  return group;
}

/// What a data set plugin is asked for (`data.dataset = "plugin"`).
struct DataRequest {
  PluginOptions options;     ///< [data.options], values as text
  std::string path;          ///< data.path, resolved against the job file's folder; may be empty
  std::uint64_t seed = 0;    ///< data.seed
  std::uint32_t context = 0; ///< model.context: the tokens a language model's sample holds
};

/// A data set plugin's arrays: samples along the first dimension. Inputs of a floating
/// or boolean type are features, of an integer type token ids; labels are class
/// indices of an integer type, one a sample or, for token ids, one a position. The
/// test split is optional: without one (empty `test_inputs.shape`), the last tenth of
/// the training samples is held out. The runtime checks all of it before training.
struct DataSplits {
  DataArray inputs;
  DataArray labels;
  DataArray test_inputs;
  DataArray test_labels;
};

/// Common base: the loader owns plugins through it.
class ACTORPIPE_EXPORT Plugin {
public:
  virtual ~Plugin() = default;
};

class ACTORPIPE_EXPORT Partitioner : public Plugin {
public:
  virtual Result<Partition> partition(const PlanContext& context) = 0;
};

class ACTORPIPE_EXPORT Mapper : public Plugin {
public:
  virtual Result<Mapping> map(const PlanContext& context, const Partition& partition) = 0;
};

class ACTORPIPE_EXPORT Scheduler : public Plugin {
public:
  virtual Result<Schedule> schedule(const ScheduleRequest& request) = 0;
  /// The chunks its schedules will have under `options`; none unless it interleaves.
  virtual Result<Chunking> chunking(const PluginOptions& options) {
    (void)options;
    return Chunking{};
  }
};

/// Asked round 0 of each stage before a run: its kind decides how the run syncs. For
/// the lockstep kinds it is then asked each step's round of each stage; for
/// scheduled_averaging never again (the run's group scheduler forms the groups).
class ACTORPIPE_EXPORT SyncPolicy : public Plugin {
public:
  virtual Result<SyncRound> round(const SyncRequest& request) = 0;
};

/// Data for a run to train on, for what the built-in data sets do not read. Asked once
/// per process before anything is written; every process of a run must get the same
/// arrays for the same request (draw from `seed`), as shuffling and sharding assume.
class ACTORPIPE_EXPORT DataSource : public Plugin {
public:
  virtual Result<DataSplits> load(const DataRequest& request) = 0;
};

namespace plugin_detail {

inline Error from_exception(const char* operation) {
  try {
    throw;
  } catch (const std::exception& e) {
    return Error::run_failed(std::string(operation) + " threw: " + e.what());
  } catch (...) {
    return Error::run_failed(std::string(operation) + " threw a non-standard exception");
  }
}

/// Wrappers instantiated inside the plugin module, so a throw is caught there.
template <class Impl> struct GuardedPartitioner final : Impl {
  Result<Partition> partition(const PlanContext& c) override {
    try {
      return Impl::partition(c);
    } catch (...) {
      return from_exception("partition");
    }
  }
};
template <class Impl> struct GuardedMapper final : Impl {
  Result<Mapping> map(const PlanContext& c, const Partition& p) override {
    try {
      return Impl::map(c, p);
    } catch (...) {
      return from_exception("map");
    }
  }
};
template <class Impl> struct GuardedScheduler final : Impl {
  Result<Schedule> schedule(const ScheduleRequest& r) override {
    try {
      return Impl::schedule(r);
    } catch (...) {
      return from_exception("schedule");
    }
  }
  Result<Chunking> chunking(const PluginOptions& o) override {
    try {
      return Impl::chunking(o);
    } catch (...) {
      return from_exception("chunking");
    }
  }
};
template <class Impl> struct GuardedSyncPolicy final : Impl {
  Result<SyncRound> round(const SyncRequest& r) override {
    try {
      return Impl::round(r);
    } catch (...) {
      return from_exception("round");
    }
  }
};

template <class Impl> struct GuardedDataSource final : Impl {
  Result<DataSplits> load(const DataRequest& r) override {
    try {
      return Impl::load(r);
    } catch (...) {
      return from_exception("load");
    }
  }
};

template <class Impl> struct Guard;
template <class Impl>
requires std::is_base_of_v<Partitioner, Impl>
struct Guard<Impl> {
  using type = GuardedPartitioner<Impl>;
  static constexpr const char* kind = "partitioner";
};
template <class Impl>
requires std::is_base_of_v<Mapper, Impl>
struct Guard<Impl> {
  using type = GuardedMapper<Impl>;
  static constexpr const char* kind = "mapper";
};
template <class Impl>
requires std::is_base_of_v<Scheduler, Impl>
struct Guard<Impl> {
  using type = GuardedScheduler<Impl>;
  static constexpr const char* kind = "scheduler";
};
template <class Impl>
requires std::is_base_of_v<SyncPolicy, Impl>
struct Guard<Impl> {
  using type = GuardedSyncPolicy<Impl>;
  static constexpr const char* kind = "sync";
};
template <class Impl>
requires std::is_base_of_v<DataSource, Impl>
struct Guard<Impl> {
  using type = GuardedDataSource<Impl>;
  static constexpr const char* kind = "dataset";
};

} // namespace plugin_detail
} // namespace actorpipe

#define ACTORPIPE_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

/// Declares a plugin module. CLASS derives from Partitioner, Mapper, Scheduler,
/// SyncPolicy or DataSource (which decides the kind) and is default-constructible. Use it once per
/// module, at namespace scope:
///   ACTORPIPE_PLUGIN(UniformPartitioner, "uniform", "1.0", "equal block counts")
#define ACTORPIPE_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION)                                                            \
  ACTORPIPE_PLUGIN_EXPORT const ::actorpipe::PluginInfo actorpipe_plugin_info = {                                      \
      ::actorpipe::plugin_abi_version, ::actorpipe::plugin_detail::Guard<CLASS>::kind, NAME, VERSION, DESCRIPTION};    \
  ACTORPIPE_PLUGIN_EXPORT ::actorpipe::Plugin* actorpipe_plugin_create() noexcept {                                    \
    try {                                                                                                              \
      return new ::actorpipe::plugin_detail::Guard<CLASS>::type();                                                     \
    } catch (...) {                                                                                                    \
      return nullptr;                                                                                                  \
    }                                                                                                                  \
  }
