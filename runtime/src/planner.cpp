/// The planning pipeline: micro-batching, partitioner plugin, mapper plugin, then the
/// per-stage estimates that reports and comparisons use.

#include <actorpipe/planner.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

namespace actorpipe {

namespace {

std::string plugin_label(const PluginRegistry& plugins, PluginKind kind, const std::string& name) {
  const PluginRecord* record = plugins.find(kind, name);
  return std::string(to_string(kind)) + " '" + name + "'" + (record ? " (" + record->file + ")" : "") + ": ";
}

/// A plugin that cannot plan this job is bad input (exit 2), whatever code it chose:
/// the job named the plugin, and planning runs nothing.
Error plugin_failed(Error error, const std::string& label) {
  return Error::bad_input(label + error.message);
}

/// Checks what a partitioner returned before anything relies on it.
Status check_partition(const Partition& partition, const ModelProfile& profile, std::size_t stages, bool sub_blocks) {
  if (partition.cuts.size() != stages + 1)
    return Error::run_failed("returned " + std::to_string(partition.cuts.size()) + " cuts for " +
                             std::to_string(stages) + " stages (expected " + std::to_string(stages + 1) + ")");
  if (partition.cuts.front() != Cut{0, 0}) return Error::run_failed("the first cut is not at the model's start");
  if (partition.cuts.back() != Cut{profile.blocks.size(), 0})
    return Error::run_failed("the last cut is not at the model's end");
  for (std::size_t i = 1; i < partition.cuts.size(); ++i) {
    const Cut& cut = partition.cuts[i];
    if (!(partition.cuts[i - 1] < cut)) return Error::run_failed("stage " + std::to_string(i - 1) + " is empty");
    if (cut.sub > 0) {
      if (!sub_blocks) return Error::run_failed("cuts inside " + describe(profile, cut) + " but plan.sub_blocks is false");
      if (cut.block >= profile.blocks.size() || cut.sub >= profile.blocks[cut.block].sub_blocks.size())
        return Error::run_failed("cuts at a sub-block that " + describe(profile, {cut.block, 0}) + " does not have");
    }
  }
  return Ok{};
}

/// Micro-batches whose activations a stage holds at once under the named schedule.
std::size_t in_flight(const std::string& scheduler, std::size_t stage, std::size_t stages, std::size_t micro_batches) {
  if (scheduler == "gpipe") return micro_batches; // all forwards before any backward
  return std::min(micro_batches, stages - stage); // one-forward-one-backward family
}

/// Bytes of gradients and optimizer state per byte of parameters.
double optimizer_factor(const TrainOptions& train) {
  if (train.optimizer == "adam") return 3.0;        // gradient, first and second moments
  return train.momentum > 0 ? 2.0 : 1.0;            // gradient (+ momentum buffer)
}

void estimate(Plan& plan, const JobSpec& job) {
  const ModelProfile& profile = job.profile;
  const std::vector<Unit> units = profile.units(true);
  const std::uint32_t micro_batch = *std::max_element(plan.micro_batch_sizes.begin(), plan.micro_batch_sizes.end());
  const double scale = static_cast<double>(micro_batch) / profile.batch_size;
  std::vector<double> compute, parameters;
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    StagePlan& stage = plan.stages[s];
    double forward = 0, backward = 0;
    std::uint64_t parameter_bytes = 0, stash_per_sample = 0;
    // Stage boundaries fall between units, so every unit is wholly in or out.
    for (const Unit& unit : units) {
      if (unit.begin < stage.begin || !(unit.begin < stage.end)) continue;
      forward += unit.forward_ms;
      backward += unit.backward_ms;
      parameter_bytes += unit.parameter_bytes;
      stash_per_sample += unit.stash_bytes_per_sample;
    }
    double slowest = std::numeric_limits<double>::infinity();
    for (std::size_t p = 0; p < plan.pipelines; ++p)
      slowest = std::min(slowest, job.cluster.devices[plan.devices[p][s]].speed);
    StageEstimate& e = stage.estimate;
    e.forward_ms = forward * scale / slowest;
    e.backward_ms = backward * scale / slowest;
    e.compute_ms = e.forward_ms + e.backward_ms;
    e.parameter_bytes = parameter_bytes;
    e.optimizer_bytes = static_cast<std::uint64_t>(static_cast<double>(parameter_bytes) * optimizer_factor(job.train));
    e.activation_bytes = stash_per_sample * micro_batch *
                         in_flight(plan.scheduler, s, plan.stages.size(), plan.micro_batch_sizes.size());
    e.memory_bytes = e.parameter_bytes + e.optimizer_bytes + e.activation_bytes;
    compute.push_back(e.compute_ms);
    parameters.push_back(static_cast<double>(parameter_bytes));
  }
  auto ratio = [](const std::vector<double>& values) {
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    return mean > 0 ? *std::max_element(values.begin(), values.end()) / mean : 1.0;
  };
  plan.balance = ratio(compute);
  plan.parameter_balance = ratio(parameters);
}

} // namespace

std::vector<std::uint32_t> split_batch(std::uint32_t samples, std::uint32_t micro_batches) {
  std::vector<std::uint32_t> sizes(micro_batches, samples / micro_batches);
  for (std::uint32_t i = 0; i < samples % micro_batches; ++i) ++sizes[i];
  return sizes;
}

Result<Plan> make_plan(const JobSpec& job, const PluginRegistry& plugins) {
  const auto started = std::chrono::steady_clock::now();
  const ClusterSpec& cluster = job.cluster;
  const std::size_t devices = cluster.devices.size();
  const std::size_t pipelines = job.plan.pipelines;
  if (pipelines > devices)
    return Error::bad_input(job.where("plan.pipelines") + std::to_string(pipelines) + " pipelines need at least as many devices; cluster '" +
                            cluster.name + "' has " + std::to_string(devices));
  const std::size_t stages = job.plan.stages ? job.plan.stages : devices / pipelines;
  if (stages * pipelines > devices)
    return Error::bad_input(job.where("plan.stages") + std::to_string(stages) + " stages × " + std::to_string(pipelines) +
                            " pipelines need " + std::to_string(stages * pipelines) + " devices; cluster '" + cluster.name +
                            "' has " + std::to_string(devices));
  const std::size_t unit_count = job.profile.units(job.plan.sub_blocks).size();
  if (stages > unit_count)
    return Error::bad_input(job.where("plan.stages") + std::to_string(stages) + " stages, but model '" + job.profile.name +
                            "' has only " + std::to_string(unit_count) + (job.plan.sub_blocks ? " blocks and sub-blocks" : " blocks"));
  const std::uint32_t batch = job.train.batch_size;
  if (batch % pipelines != 0)
    return Error::bad_input(job.where("train.batch_size") + std::to_string(batch) + " samples do not split evenly over " +
                            std::to_string(pipelines) + " pipelines");
  const std::uint32_t per_pipeline = batch / static_cast<std::uint32_t>(pipelines);
  const std::uint32_t micro_batches = job.plan.micro_batches ? job.plan.micro_batches : static_cast<std::uint32_t>(stages);
  if (micro_batches > per_pipeline)
    return Error::bad_input(job.where(job.plan.micro_batches ? "plan.micro_batches" : "train.batch_size") +
                            std::to_string(micro_batches) + " micro-batches need at least as many samples per pipeline, but each gets " +
                            std::to_string(per_pipeline));

  Plan plan;
  plan.model = job.profile.name;
  plan.cluster = cluster.name;
  plan.partitioner = job.plan.partitioner;
  plan.mapper = job.plan.mapper;
  plan.scheduler = job.plan.scheduler;
  plan.sync = job.plan.sync;
  plan.pipelines = pipelines;
  plan.batch_size = batch;
  plan.micro_batch_sizes = split_batch(per_pipeline, micro_batches);

  PlanContext context{.profile = job.profile, .cluster = cluster};
  context.stages = stages;
  context.pipelines = pipelines;
  context.batch_size = batch;
  context.micro_batch_sizes = plan.micro_batch_sizes;
  context.scheduler = plan.scheduler;
  context.sub_blocks = job.plan.sub_blocks;

  auto partitioner = plugins.partitioner(plan.partitioner);
  if (!partitioner) return plugin_failed(std::move(partitioner).error(), job.where("plan.partitioner"));
  if (const auto it = job.plan.options.find(plan.partitioner); it != job.plan.options.end()) context.options = it->second;
  auto partition = (*partitioner)->partition(context);
  const std::string partitioner_label = plugin_label(plugins, PluginKind::partitioner, plan.partitioner);
  if (!partition) return plugin_failed(std::move(partition).error(), partitioner_label);
  if (auto s = check_partition(*partition, job.profile, stages, job.plan.sub_blocks); !s)
    return plugin_failed(std::move(s).error(), partitioner_label);
  for (std::size_t s = 0; s < stages; ++s) plan.stages.push_back({partition->cuts[s], partition->cuts[s + 1], {}});

  auto mapper = plugins.mapper(plan.mapper);
  if (!mapper) return plugin_failed(std::move(mapper).error(), job.where("plan.mapper"));
  context.options.clear();
  if (const auto it = job.plan.options.find(plan.mapper); it != job.plan.options.end()) context.options = it->second;
  auto mapping = (*mapper)->map(context, *partition);
  const std::string mapper_label = plugin_label(plugins, PluginKind::mapper, plan.mapper);
  if (!mapping) return plugin_failed(std::move(mapping).error(), mapper_label);
  plan.devices = std::move(mapping->devices);
  if (auto s = plan.validate(job.profile, cluster); !s) return plugin_failed(std::move(s).error(), mapper_label);

  estimate(plan, job);
  plan.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

} // namespace actorpipe
