#include "planner/candidate.hpp"

#include <actorpipe/planner.hpp>
#include <actorpipe/schedule_io.hpp>

#include "sim/topology.hpp"
#include "sim/stage_figures.hpp"
#include "sync/elastic_problem.hpp"
#include "sync/group_scheduler.hpp"
#include "sync/stepping.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace actorpipe::planning {

namespace {

/// Pipelines stepping alone drift apart, a faster one taking one part more every few of
/// a slower one's: one iteration would show only the slowest pace, this many show the
/// steady one within a few percent.
constexpr std::size_t asynchronous_iterations = 16;

std::string plugin_label(const PluginRegistry& plugins, PluginKind kind, const std::string& name) {
  const PluginRecord* record = plugins.find(kind, name);
  return std::string(to_string(kind)) + " '" + name + "'" + (record ? " (" + record->file + ")" : "") + ": ";
}

/// A plugin that cannot plan this job is bad input (exit 2), whatever code it chose:
/// the job named the plugin, and planning runs nothing.
Error plugin_failed(Error error, const std::string& label) { return Error::bad_input(label + error.message); }

/// What a plugin returned as an error, placed where the job set the option it names
/// (plugins quote the keys of [plan.options.NAME] they refuse), else under its label.
Error plugin_refused(Error error, const std::string& label, const JobSpec& job, const std::string& plugin) {
  const auto it = job.plan.options.find(plugin);
  if (it != job.plan.options.end())
    for (const auto& [key, value] : it->second)
      if (error.message.find("'" + key + "'") != std::string::npos)
        return Error::bad_input(job.where("plan.options." + plugin + "." + key) + label + error.message);
  return plugin_failed(std::move(error), label);
}

PluginOptions options_for(const JobSpec& job, const std::string& name) {
  const auto it = job.plan.options.find(name);
  return it == job.plan.options.end() ? PluginOptions{} : it->second;
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
      if (!sub_blocks)
        return Error::run_failed("cuts inside " + describe(profile, cut) + " but plan.sub_blocks is false");
      if (cut.block >= profile.blocks.size() || cut.sub >= profile.blocks[cut.block].sub_blocks.size())
        return Error::run_failed("cuts at a sub-block that " + describe(profile, {cut.block, 0}) + " does not have");
    }
  }
  return Ok{};
}

/// Where the mapping put each stage: its slowest replica's speed, smallest memory.
void placement_hints(const Plan& plan, const ClusterSpec& cluster, std::vector<double>& speeds,
                     std::vector<std::uint64_t>& memory) {
  const std::size_t S = plan.stages.size();
  speeds.assign(S, std::numeric_limits<double>::infinity());
  memory.assign(S, std::numeric_limits<std::uint64_t>::max());
  for (const auto& pipeline : plan.devices)
    for (std::size_t s = 0; s < S; ++s) {
      speeds[s] = std::min(speeds[s], cluster.devices[pipeline[s]].speed);
      memory[s] = std::min(memory[s], cluster.devices[pipeline[s]].memory_bytes);
    }
}

Result<Schedule> make_schedule(const Planning& planning, const Shape& shape, const Plan& plan,
                               const std::vector<Cut>& cuts) {
  const JobSpec& job = planning.job;
  if (planning.schedule_file) return *planning.schedule_file;
  const SchedulerChoice& scheduler = planning.schedulers[shape.scheduler];
  std::vector<Recompute> recompute;
  for (const StagePlan& stage : plan.stages)
    recompute.push_back(stage.recompute);
  const std::vector<StageFigures> figures = stage_figures(job.profile, cuts, recompute);
  const sim::Topology topology(job.cluster);
  std::vector<double> speeds;
  std::vector<std::uint64_t> memory;
  placement_hints(plan, job.cluster, speeds, memory);
  ScheduleRequest request;
  request.chunking = scheduler.chunking;
  request.stages = shape.stages;
  request.micro_batch_sizes = plan.schedule.micro_batch_sizes;
  request.action_overhead_ms = job.plan.action_overhead_ms;
  request.options = options_for(job, scheduler.name);
  // Per virtual stage (per stage without chunks), in model order.
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    request.stage_forward_ms.push_back(figures[s].forward_ms / speeds[s]);
    request.stage_backward_ms.push_back(figures[s].backward_ms / speeds[s]);
    request.stage_forward_fixed_ms.push_back(figures[s].forward_fixed_ms / speeds[s]);
    request.stage_backward_fixed_ms.push_back(figures[s].backward_fixed_ms / speeds[s]);
    request.stage_input_gradient_share.push_back(figures[s].input_gradient_share);
    if (s + 1 < plan.stages.size()) {
      const sim::Route route = topology.route(plan.devices[0][s], plan.devices[0][s + 1]);
      request.send_ms.push_back(std::isinf(route.bytes_per_ms) ? 0.0 : figures[s].output_bytes / route.bytes_per_ms);
    }
  }
  auto schedule = scheduler.plugin->schedule(request);
  if (!schedule) return plugin_refused(std::move(schedule).error(), scheduler.label, planning.job, scheduler.name);
  if (auto s = validate(*schedule); !s) return plugin_failed(std::move(s).error(), scheduler.label);
  const std::uint64_t expected =
      std::accumulate(request.micro_batch_sizes.begin(), request.micro_batch_sizes.end(), std::uint64_t{0});
  if (schedule->stages.size() != request.stages || schedule->samples() != expected)
    return plugin_failed(Error::run_failed("returned a schedule of " + std::to_string(schedule->stages.size()) +
                                           " stages and " + std::to_string(schedule->samples()) + " samples for " +
                                           std::to_string(request.stages) + " stages and " + std::to_string(expected)),
                         scheduler.label);
  if (schedule->chunks != request.chunking.chunks || schedule->shape != request.chunking.shape)
    return plugin_failed(Error::run_failed("returned a schedule of " + std::to_string(schedule->chunks) + " chunks (" +
                                           to_string(schedule->shape) + ") after saying " +
                                           std::to_string(request.chunking.chunks) + " (" +
                                           to_string(request.chunking.shape) + ")"),
                         scheduler.label);
  return schedule;
}

/// The partitioner's cuts for `context` as it stands, checked.
Result<Partition> partition_for(const Planning& planning, PlanContext& context) {
  const JobSpec& job = planning.job;
  context.options = options_for(job, job.plan.partitioner);
  auto partition = planning.partitioner->partition(context);
  if (!partition)
    return plugin_refused(std::move(partition).error(), planning.partitioner_label, job, job.plan.partitioner);
  if (auto s = check_partition(*partition, job.profile, context.stages, job.plan.sub_blocks); !s)
    return plugin_failed(std::move(s).error(), planning.partitioner_label);
  return partition;
}

/// The mapper's devices for `partition`, per virtual stage. With chunks the mapper
/// places the devices' shares of the model: each device's chunks, taken as the stretch
/// of as many virtual stages (balanced chunks weigh alike wherever they sit), and every
/// virtual stage goes where its device went.
Result<std::vector<std::vector<DeviceId>>> map_devices(const Planning& planning, const Shape& shape,
                                                       const PlanContext& context, const Partition& partition,
                                                       const Schedule& layout) {
  const JobSpec& job = planning.job;
  PlanContext mapping_context = context;
  mapping_context.options = options_for(job, job.plan.mapper);
  Partition devices_share = partition;
  if (layout.chunks > 1) {
    mapping_context.stages = shape.stages;
    mapping_context.chunking = {};
    mapping_context.stage_speeds.clear();
    mapping_context.stage_memory.clear();
    mapping_context.placement.clear();
    devices_share.cuts.clear();
    for (std::size_t d = 0; d <= shape.stages; ++d)
      devices_share.cuts.push_back(partition.cuts[d * layout.chunks]);
  }
  auto mapping = planning.mapper->map(mapping_context, devices_share);
  if (!mapping) return plugin_refused(std::move(mapping).error(), planning.mapper_label, job, job.plan.mapper);
  if (layout.chunks == 1) return std::move(mapping->devices);
  std::vector<std::vector<DeviceId>> devices;
  for (const auto& pipeline : mapping->devices) {
    if (pipeline.size() != shape.stages)
      return plugin_failed(Error::run_failed("returned devices for " + std::to_string(pipeline.size()) +
                                             " stages, not " + std::to_string(shape.stages)),
                           planning.mapper_label);
    auto& out = devices.emplace_back();
    for (std::size_t s = 0; s < layout.virtual_stages(); ++s)
      out.push_back(pipeline[layout.place_of(s).stage]);
  }
  return devices;
}

/// Maps, schedules and simulates `partition` with `context` as it stands.
Result<Candidate> price(const Planning& planning, const Shape& shape, PlanContext& context,
                        const Partition& partition) {
  const JobSpec& job = planning.job;
  Candidate candidate;
  Plan& plan = candidate.plan;
  plan.model = job.profile.name;
  plan.cluster = job.cluster.name;
  plan.partitioner = job.plan.partitioner;
  plan.mapper = job.plan.mapper;
  plan.scheduler = planning.schedule_file ? planning.schedule_file->name : planning.schedulers[shape.scheduler].name;
  plan.sync = job.plan.sync;
  plan.stepping = planning.stepping;
  plan.pipelines = shape.pipelines;
  plan.batch_size = job.train.batch_size;
  // The micro-batches the scheduler is asked for; its schedule may slice them.
  plan.schedule.micro_batch_sizes = context.micro_batch_sizes;
  // The schedule's chunks, known before the scheduler runs, place the virtual stages.
  const Chunking chunking = planning.chunking(shape);
  plan.schedule.stages.resize(shape.stages);
  plan.schedule.chunks = chunking.chunks;
  plan.schedule.shape = chunking.shape;
  const std::size_t virtual_stages = plan.schedule.virtual_stages();
  for (std::size_t s = 0; s < virtual_stages; ++s)
    plan.stages.push_back(
        {partition.cuts[s], partition.cuts[s + 1], {}, planning.recompute(plan.schedule.place_of(s).stage)});

  auto mapping = map_devices(planning, shape, context, partition, plan.schedule);
  ACTORPIPE_TRY(mapping);
  plan.devices = std::move(*mapping);
  if (auto s = plan.validate(job.profile, job.cluster); !s)
    return plugin_failed(std::move(s).error(), planning.mapper_label);

  auto schedule = make_schedule(planning, shape, plan, partition.cuts);
  ACTORPIPE_TRY(schedule);
  plan.schedule = std::move(*schedule);

  SimulationOptions options;
  options.iterations = plan.stepping.asynchronous ? asynchronous_iterations : 1;
  options.action_overhead_ms = job.plan.action_overhead_ms;
  options.optimizer_factor = planning.optimizer_factor;
  options.cuda_graphs = job.train.cuda_graphs;
  auto report = simulate(plan, job.profile, job.cluster, options);
  if (!report) return std::move(report).error().with_context(planning.scheduler_label(shape));
  candidate.report = std::move(*report);

  const SimulationReport& r = candidate.report;
  plan.iteration_time_ms = r.iteration_time_ms;
  plan.samples_per_s = r.samples_per_s;
  // A device's memory holds all its chunks.
  std::map<std::pair<std::size_t, DeviceId>, std::uint64_t> device_memory;
  for (const DeviceReport& d : r.devices)
    device_memory[{d.pipeline, d.device}] += d.peak_memory_bytes;
  std::vector<double> compute, parameters;
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    StageEstimate& e = plan.stages[s].estimate;
    e.forward_ms = r.stages[s].forward_ms;
    e.backward_ms = r.stages[s].backward_ms;
    e.compute_ms = e.forward_ms + e.backward_ms;
    e.bubble = r.stages[s].bubble;
    for (std::size_t p = 0; p < shape.pipelines; ++p) {
      const DeviceReport& d = r.devices[p * plan.stages.size() + s];
      const std::uint64_t held = device_memory.at({p, d.device});
      e.parameter_bytes = d.parameter_bytes;
      e.optimizer_bytes = d.optimizer_bytes;
      e.activation_bytes = std::max(e.activation_bytes, d.activation_bytes);
      e.workspace_bytes = std::max(e.workspace_bytes, d.workspace_bytes);
      e.memory_bytes = std::max(e.memory_bytes, d.peak_memory_bytes);
      const double ratio = static_cast<double>(held) / static_cast<double>(d.memory_capacity);
      candidate.fullest = std::max(candidate.fullest, ratio);
      if (ratio > 1 && ratio > candidate.overflow_ratio) {
        candidate.overflow_ratio = ratio;
        candidate.overflow =
            "stage " + std::to_string(s) + " (blocks " + describe_blocks(plan.stages[s]) + ") on device " +
            job.cluster.devices[d.device].name + " needs " + text::format_bytes(d.peak_memory_bytes) +
            (held > d.peak_memory_bytes ? " (" + text::format_bytes(held) + " with the device's other chunks)" : "") +
            " (parameters " + text::format_bytes(d.parameter_bytes) + ", optimizer " +
            text::format_bytes(d.optimizer_bytes) + ", activations " + text::format_bytes(d.activation_bytes) +
            ", workspace " + text::format_bytes(d.workspace_bytes) + ") but has " +
            text::format_bytes(d.memory_capacity);
      }
    }
    compute.push_back(e.compute_ms);
    parameters.push_back(static_cast<double>(e.parameter_bytes));
  }
  auto ratio = [](const std::vector<double>& values) {
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    return mean > 0 ? *std::max_element(values.begin(), values.end()) / mean : 1.0;
  };
  plan.balance = ratio(compute);
  plan.parameter_balance = ratio(parameters);
  return candidate;
}

} // namespace

Result<Planning> prepare(const JobSpec& job, const PluginRegistry& plugins) {
  Planning planning{.job = job};
  if (const std::size_t n = job.plan.recompute.size(); n > 1 && job.plan.stages != n)
    return Error::bad_input(
        job.where("plan.recompute") + std::to_string(n) + " values, one per stage, but plan.stages is " +
        (job.plan.stages == auto_count ? std::string("\"auto\"") : std::to_string(job.plan.stages)) +
        ": give one value for every stage, or set plan.stages = " + std::to_string(n));
  // Settings for a plugin that is nowhere would be ignored: a misspelt name, most likely.
  for (const auto& [name, settings] : job.plan.options) {
    std::vector<std::string> names;
    for (const PluginRecord& record : plugins.plugins())
      names.push_back(record.name);
    if (std::find(names.begin(), names.end(), name) == names.end())
      return Error::bad_input(job.where("plan.options." + name) + "no plugin is called '" + name + "'" +
                              text::did_you_mean(name, names) + " (actorpipe plugins lists them)");
  }
  auto partitioner = plugins.partitioner(job.plan.partitioner);
  if (!partitioner) return plugin_failed(std::move(partitioner).error(), job.where("plan.partitioner"));
  auto mapper = plugins.mapper(job.plan.mapper);
  if (!mapper) return plugin_failed(std::move(mapper).error(), job.where("plan.mapper"));
  planning.partitioner = *partitioner;
  planning.mapper = *mapper;
  planning.partitioner_label = plugin_label(plugins, PluginKind::partitioner, job.plan.partitioner);
  planning.mapper_label = plugin_label(plugins, PluginKind::mapper, job.plan.mapper);
  if (!job.plan.schedule_file.empty()) {
    auto schedule = load_schedule(job.plan.schedule_file);
    if (!schedule) return std::move(schedule).error().with_context(job.where("plan.schedule_file"));
    planning.schedule_file = std::move(*schedule);
    planning.schedule_file_label = "schedule file " + job.plan.schedule_file + ": ";
  } else {
    // "auto": every scheduler found, the job's own plugins' among them.
    std::vector<std::string> names;
    if (job.plan.scheduler == auto_scheduler) {
      for (const PluginRecord& record : plugins.plugins())
        if (record.kind == PluginKind::scheduler) names.push_back(record.name);
      if (names.empty())
        return Error::bad_input(job.where("plan.scheduler") + "\"auto\" chooses among the schedulers found, and "
                                                              "there are none (actorpipe plugins lists them)");
    } else {
      names.push_back(job.plan.scheduler);
    }
    for (const std::string& name : names) {
      auto scheduler = plugins.scheduler(name);
      if (!scheduler) return plugin_failed(std::move(scheduler).error(), job.where("plan.scheduler"));
      const std::string label = plugin_label(plugins, PluginKind::scheduler, name);
      auto chunking = (*scheduler)->chunking(options_for(job, name));
      if (!chunking) return plugin_refused(std::move(chunking).error(), label, job, name);
      if (chunking->chunks == 0 || (chunking->shape == ChunkShape::v && chunking->chunks != 2))
        return plugin_failed(Error::run_failed("said it puts " + std::to_string(chunking->chunks) + " chunks in a " +
                                               to_string(chunking->shape) + " (a V has 2; a loop at least 1)"),
                             label);
      planning.schedulers.push_back({name, *scheduler, label, *chunking});
    }
  }
  // The sync policy is the run's, not the plan's; a plan for a policy that cannot run,
  // or that refuses its options, is refused now rather than at the first step.
  auto sync = plugins.sync_policy(job.plan.sync);
  if (!sync) return plugin_failed(std::move(sync).error(), job.where("plan.sync"));
  const std::size_t pipelines = job.plan.pipelines != auto_count ? job.plan.pipelines : 2;
  if (auto round =
          (*sync)->round({0, pipelines, 0, std::vector<double>(pipelines, 0.0), options_for(job, job.plan.sync)});
      !round) {
    return plugin_refused(std::move(round).error(), plugin_label(plugins, PluginKind::sync, job.plan.sync), job,
                          job.plan.sync);
  } else {
    if (round->kind == SyncRound::Kind::scheduled_averaging) {
      // A policy that checks none of its own settings (a Lua one) is caught here.
      if (auto problem = sync::scheduling_problem(round->scheduling))
        return plugin_failed(Error::run_failed("returned group scheduling that cannot run: " + *problem),
                             plugin_label(plugins, PluginKind::sync, job.plan.sync));
    } else if (round->kind == SyncRound::Kind::elastic_asynchronous) {
      if (auto problem = sync::elastic_problem(*round))
        return plugin_failed(Error::run_failed("returned elastic averaging that cannot run: " + *problem),
                             plugin_label(plugins, PluginKind::sync, job.plan.sync));
    }
    if (auto problem = sync::clipping_problem(job.train.clip_norm, round->kind, job.plan.pipelines))
      return Error::bad_input(job.where("train.clip_norm") + *problem + " (plan.sync = \"" + job.plan.sync + "\")");
    planning.stepping = sync::stepping_of(*round);
  }
  planning.optimizer_factor = optimizer_state_factor(job.train);
  return planning;
}

bool better(const Candidate& a, const Candidate& b) {
  if (a.overflow.has_value() != b.overflow.has_value()) return !a.overflow;
  if (a.overflow) return a.overflow_ratio < b.overflow_ratio;
  return a.plan.samples_per_s > b.plan.samples_per_s;
}

Result<Candidate> evaluate(const Planning& planning, const Shape& shape, std::function<void(double)> progress) {
  const JobSpec& job = planning.job;
  PlanContext context{.profile = job.profile, .cluster = job.cluster};
  // The partitioner cuts every virtual stage: devices × chunks of them.
  context.chunking = planning.chunking(shape);
  context.stages = shape.stages * context.chunking.chunks;
  context.pipelines = shape.pipelines;
  context.batch_size = job.train.batch_size;
  context.micro_batch_sizes =
      planning.schedule_file
          ? planning.schedule_file->micro_batch_sizes
          : split_batch(job.train.batch_size / static_cast<std::uint32_t>(shape.pipelines), shape.micro_batches);
  context.scheduler =
      planning.schedulers.empty() ? planning.schedule_file->name : planning.schedulers[shape.scheduler].name;
  context.sub_blocks = job.plan.sub_blocks;
  context.optimizer_factor = planning.optimizer_factor;
  // One value for every stage, where the job gives one or leaves it to the planner.
  context.recompute = job.plan.recompute.empty()       ? planning.unset_recompute
                      : job.plan.recompute.size() == 1 ? job.plan.recompute.front()
                                                       : Recompute::none;
  context.action_overhead_ms = job.plan.action_overhead_ms;

  // Each round reports its share of the progress.
  constexpr int rounds = 4;
  int round = 0;
  if (progress)
    context.progress = [&round, report = std::move(progress)](double f) {
      report((round + std::clamp(f, 0.0, 1.0)) / rounds);
    };
  auto partition = partition_for(planning, context);
  ACTORPIPE_TRY(partition);
  auto best = price(planning, shape, context, *partition);
  ACTORPIPE_TRY(best);
  best->memory_bound = partition->memory_bound;
  // Later rounds tell the partitioner where its stages landed (device speeds, memory
  // and links), so that a placement-aware one can re-cut for them, and the mapper
  // places the new cuts. They alternate until the cuts repeat, a fixed point, or for
  // at most `rounds`; the best candidate of any round is kept.
  Plan last = best->plan;
  for (round = 1; round < rounds; ++round) {
    placement_hints(last, job.cluster, context.stage_speeds, context.stage_memory);
    context.placement = last.devices;
    auto next_partition = partition_for(planning, context);
    ACTORPIPE_TRY(next_partition);
    if (next_partition->cuts == partition->cuts) break;
    auto next = price(planning, shape, context, *next_partition);
    ACTORPIPE_TRY(next);
    next->memory_bound = next_partition->memory_bound;
    last = next->plan;
    partition = std::move(next_partition);
    if (better(*next, *best)) best = std::move(next);
  }
  return best;
}

} // namespace actorpipe::planning
