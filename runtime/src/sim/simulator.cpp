/// simulate(): builds the engine's model from a plan (stage figures from the profile,
/// device speeds, routes and rings from the topology), runs it, and turns what happened
/// into a report. simulate_pipeline(): one pipeline alone, priced by a dependency pass.

#include <actorpipe/simulator.hpp>

#include "sim/engine.hpp"
#include "sim/model_builder.hpp"
#include "sim/stage_figures.hpp"
#include "sim/topology.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace actorpipe {

namespace {

Status check_inputs(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster) {
  if (auto s = plan.validate(profile, cluster); !s) return s;
  return validate(plan.schedule);
}

/// By stage, whether it replays CUDA graphs where it is on a CUDA device, as the stage
/// worker decides (train/stage_worker.cpp): as train.cuda_graphs says (under "auto",
/// where its device computes another stage of the plan too: another chunk), recomputing
/// nothing, with something to differentiate. Stages that draw random numbers compute
/// eagerly too, which a profile does not say: for them the estimate is high. Devices
/// here are the plan's, one per server's GPU, not one process's CUDA devices as in
/// device::shares_gpu.
std::vector<char> graphed_stages(const SimulationOptions& options, const ModelProfile& profile, const Plan& plan,
                                 const std::vector<StageFigures>& figures) {
  std::vector<char> graphed(plan.stages.size(), 0);
  if (options.cuda_graphs == CudaGraphs::off) return graphed;
  std::map<DeviceId, std::size_t> stages_on; // by device, the stages it computes
  for (const std::vector<DeviceId>& pipeline : plan.devices)
    for (const DeviceId d : pipeline)
      ++stages_on[d];
  for (std::size_t s = 0; s < graphed.size(); ++s) {
    const bool shares =
        std::any_of(plan.devices.begin(), plan.devices.end(), [&](const std::vector<DeviceId>& pipeline) {
          return s < pipeline.size() && stages_on[pipeline[s]] > 1;
        });
    if (options.cuda_graphs == CudaGraphs::shared_gpus && !shares) continue;
    const StagePlan& stage = plan.stages[s];
    const std::vector<bool> again =
        stage.recompute == Recompute::none ? std::vector<bool>{} : recomputed_units(profile, stage);
    graphed[s] =
        !(s == 0 && figures[s].parameter_bytes == 0) && std::find(again.begin(), again.end(), true) == again.end();
  }
  return graphed;
}

/// What a stage replaying CUDA graphs holds beyond its stash (train/graphed_passes.cpp):
/// each micro-batch in flight at once has its own pair of graphs, whose memory pool
/// keeps that micro-batch's temporaries, the tensors the graphs read and write (its
/// input and output, and their gradients where they flow) and its weight gradients.
/// The eager passes before the first capture leave what one micro-batch computes with
/// cached for the capture stream, where only captures, into their own pools, follow.
std::uint64_t graphed_workspace_bytes(const StageFigures& f, double input_bytes_per_sample, bool first, bool last,
                                      std::uint64_t stashed_samples, std::uint64_t largest_micro_batch) {
  const std::uint64_t slots =
      std::max<std::uint64_t>(1, (stashed_samples + largest_micro_batch - 1) / largest_micro_batch);
  const double copies = input_bytes_per_sample * (first ? 1 : 2) + f.output_bytes * (last ? 0 : 2);
  const double slot =
      static_cast<double>(largest_micro_batch) * (static_cast<double>(f.workspace_bytes_per_sample) + copies) +
      static_cast<double>(f.parameter_bytes);
  const double warm_up = static_cast<double>(largest_micro_batch) *
                         static_cast<double>(f.stash_bytes_per_sample + f.workspace_bytes_per_sample);
  return static_cast<std::uint64_t>(static_cast<double>(slots) * slot + warm_up);
}

} // namespace

Result<SimulationReport> simulate(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster,
                                  const SimulationOptions& options) {
  ACTORPIPE_TRY(check_inputs(plan, profile, cluster));
  if (!options.processors.empty() && options.processors.size() != cluster.devices.size())
    return Error::bad_input("simulation: " + std::to_string(options.processors.size()) + " processors given for " +
                            std::to_string(cluster.devices.size()) + " devices");
  const std::size_t S = plan.stages.size();
  const std::size_t P = plan.pipelines;
  std::vector<Cut> cuts{plan.stages.front().begin};
  for (const StagePlan& stage : plan.stages)
    cuts.push_back(stage.end);
  std::vector<Recompute> recompute;
  for (const StagePlan& stage : plan.stages)
    recompute.push_back(stage.recompute);
  const std::vector<StageFigures> figures = stage_figures(profile, cuts, recompute);
  const std::vector<char> graphed = graphed_stages(options, profile, plan, figures);
  const std::vector<std::uint64_t> stashed = peak_stashed_samples(plan.schedule);
  const std::uint64_t largest_micro_batch =
      *std::max_element(plan.schedule.micro_batch_sizes.begin(), plan.schedule.micro_batch_sizes.end());
  const sim::Topology topology(cluster);

  sim::Model model;
  model.schedule = &plan.schedule;
  model.stages = S;
  model.action_overhead_ms = options.action_overhead_ms;
  model.stragglers = options.stragglers;
  model.trace = options.trace;
  model.stepping = plan.stepping;
  model.lane_bytes_per_ms.resize(topology.lane_count());
  for (sim::LaneId l = 0; l < topology.lane_count(); ++l)
    model.lane_bytes_per_ms[l] = topology.bytes_per_ms(l);

  SimulationReport report;
  model.instances.reserve(P * S);
  report.devices.reserve(P * S);
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t s = 0; s < S; ++s) {
      const DeviceId d = plan.devices[p][s];
      const Device& device = cluster.devices[d];
      const StageFigures& f = figures[s];
      sim::Instance instance;
      instance.pipeline = p;
      instance.stage = s;
      instance.device = d;
      instance.processor = options.processors.empty() ? d : options.processors.at(d);
      model.processors = std::max(model.processors, instance.processor + 1);
      sim::set_stage_costs(instance, f, device, options.optimizer_factor);
      instance.send_bytes_per_sample = s + 1 < S ? f.output_bytes : 0;
      instance.grad_bytes_per_sample = s > 0 ? figures[s - 1].output_bytes : 0;
      if (s + 1 < S) instance.to_next = topology.route(d, plan.devices[p][s + 1]);
      if (s > 0) instance.to_previous = topology.route(d, plan.devices[p][s - 1]);
      model.instances.push_back(instance);

      DeviceReport& r = report.devices.emplace_back();
      r.device = d;
      r.pipeline = p;
      r.stage = s;
      r.parameter_bytes = f.parameter_bytes;
      r.optimizer_bytes = static_cast<std::uint64_t>(static_cast<double>(f.parameter_bytes) * options.optimizer_factor);
      r.activation_bytes = stashed[s] * f.stash_bytes_per_sample;
      r.workspace_bytes =
          graphed[s] && device.computes_on_cuda()
              ? graphed_workspace_bytes(f,
                                        s == 0 ? static_cast<double>(profile.input_bytes) / profile.batch_size
                                               : figures[s - 1].output_bytes,
                                        s == 0, s + 1 == S, stashed[s], largest_micro_batch)
              : largest_micro_batch * f.workspace_bytes_per_sample;
      r.peak_memory_bytes = r.parameter_bytes + r.optimizer_bytes + r.activation_bytes + r.workspace_bytes;
      r.memory_capacity = device.memory_bytes;
    }
  for (std::size_t s = 0; s < S; ++s) {
    std::vector<std::uint32_t> members;
    std::vector<DeviceId> devices;
    for (std::size_t p = 0; p < P; ++p) {
      members.push_back(static_cast<std::uint32_t>(p * S + s));
      devices.push_back(plan.devices[p][s]);
    }
    model.groups.push_back(sim::make_group(topology, cluster, std::move(members), devices,
                                           static_cast<double>(figures[s].parameter_bytes)));
  }

  sim::Outcome outcome = sim::run(model, options.iterations);
  report.iterations = options.iterations;
  report.events = outcome.events;
  report.repeated_iterations = outcome.repeated_iterations;
  double previous = 0;
  for (double end : outcome.iteration_end_ms) {
    report.iteration_ms.push_back(end - previous);
    previous = end;
  }
  report.total_ms = previous;
  report.iteration_time_ms = options.iterations ? report.total_ms / static_cast<double>(options.iterations) : 0;
  report.samples_per_s = report.iteration_time_ms > 0 ? plan.batch_size / report.iteration_time_ms * 1000.0 : 0;

  report.stages.resize(S);
  // A device computes for all its chunks: each virtual stage reports its device's busy
  // time, so that a chunk's idle time while its sibling computes is no bubble.
  const std::size_t D = plan.schedule.stages.size();
  std::vector<double> device_busy_ms(P * D, 0.0);
  for (std::size_t i = 0; i < model.instances.size(); ++i)
    device_busy_ms[model.instances[i].pipeline * D + plan.schedule.place_of(model.instances[i].stage).stage] +=
        outcome.busy_ms[i];
  for (std::size_t i = 0; i < model.instances.size(); ++i) {
    const sim::Instance& instance = model.instances[i];
    DeviceReport& device = report.devices[i];
    const double busy_ms = device_busy_ms[instance.pipeline * D + plan.schedule.place_of(instance.stage).stage];
    device.busy = report.total_ms > 0 ? busy_ms / report.total_ms : 0;
    StageReport& stage = report.stages[instance.stage];
    stage.forward_ms =
        std::max(stage.forward_ms, instance.forward_fixed_ms +
                                       instance.forward_ms_per_sample * static_cast<double>(largest_micro_batch) +
                                       options.action_overhead_ms);
    stage.backward_ms =
        std::max(stage.backward_ms, instance.backward_fixed_ms +
                                        instance.backward_ms_per_sample * static_cast<double>(largest_micro_batch) +
                                        options.action_overhead_ms);
    stage.busy = std::max(stage.busy, device.busy);
    stage.sync_ms = std::max(stage.sync_ms, options.iterations ? outcome.sync_ms[i] / options.iterations : 0.0);
  }
  for (StageReport& stage : report.stages)
    stage.bubble = std::max(0.0, 1.0 - stage.busy);
  for (sim::LaneId l = 0; l < outcome.lane_busy_ms.size(); ++l)
    if (outcome.lane_bytes[l] > 0)
      report.links.push_back({topology.lane_name(l),
                              report.total_ms > 0 ? outcome.lane_busy_ms[l] / report.total_ms : 0,
                              outcome.lane_bytes[l]});
  std::stable_sort(report.links.begin(), report.links.end(),
                   [](const LinkReport& a, const LinkReport& b) { return a.busy > b.busy; });
  report.spans = std::move(outcome.spans);
  return report;
}

PipelineTiming simulate_pipeline(const Schedule& schedule, const std::vector<double>& forward_ms_per_sample,
                                 const std::vector<double>& backward_ms_per_sample,
                                 const std::vector<double>& send_ms_per_sample, double action_overhead_ms,
                                 const std::vector<double>& input_gradient_share) {
  // Without shared lanes nothing depends on the order in which actions are priced, so
  // a dependency pass (each action starts when its device is free and its input has
  // arrived) gives the same times as the event engine in O(actions), with no queue.
  const std::size_t D = schedule.stages.size();
  const std::size_t V = schedule.virtual_stages();
  const std::size_t m = schedule.micro_batch_sizes.size();
  PipelineTiming timing;
  timing.busy_ms.assign(D, 0.0);
  std::vector<double> forward_end(V * m, -1.0), backward_end(V * m, -1.0), free_at(D, 0.0);
  std::vector<std::size_t> next(D, 0);
  // Between virtual stages on one device (a V's turn) nothing is sent.
  auto send = [&](std::size_t boundary, std::uint32_t size) {
    if (!schedule.crosses_devices(boundary)) return 0.0;
    return boundary < send_ms_per_sample.size() ? send_ms_per_sample[boundary] * size : 0.0;
  };
  std::vector<std::size_t> work(D);
  for (std::size_t d = 0; d < D; ++d)
    work[d] = d;
  while (!work.empty()) {
    const std::size_t d = work.back();
    work.pop_back();
    while (next[d] < schedule.stages[d].size()) {
      const Action& a = schedule.stages[d][next[d]];
      if (!per_micro_batch(a.op)) { // no sync and no step here: one pipeline alone
        ++next[d];
        continue;
      }
      const std::size_t v = schedule.virtual_stage(d, a.chunk);
      double input = 0;
      if (a.op == Op::forward && v > 0) {
        if (forward_end[(v - 1) * m + a.micro_batch] < 0) break;
        input = forward_end[(v - 1) * m + a.micro_batch] + send(v - 1, a.size);
      } else if (sends_gradient(a.op)) {
        if (v + 1 < V) {
          if (backward_end[(v + 1) * m + a.micro_batch] < 0) break;
          input = backward_end[(v + 1) * m + a.micro_batch] + send(v, a.size);
        } else {
          input = forward_end[v * m + a.micro_batch];
        }
      } // a W waits for its own stage only
      const double share = v < input_gradient_share.size() ? input_gradient_share[v] : unmeasured_input_gradient_share;
      const double ms =
          action_overhead_ms + a.size * (a.op == Op::forward ? forward_ms_per_sample[v]
                                                             : backward_share(a.op, share) * backward_ms_per_sample[v]);
      const double end = std::max(input, free_at[d]) + ms;
      if (a.op == Op::forward) {
        forward_end[v * m + a.micro_batch] = end;
        if (v + 1 < V) work.push_back(schedule.place_of(v + 1).stage);
      } else if (sends_gradient(a.op)) {
        backward_end[v * m + a.micro_batch] = end;
        if (v > 0) work.push_back(schedule.place_of(v - 1).stage);
      }
      free_at[d] = end;
      timing.busy_ms[d] += ms;
      timing.makespan_ms = std::max(timing.makespan_ms, end);
      ++next[d];
    }
  }
  timing.critical_stage =
      static_cast<std::size_t>(std::max_element(timing.busy_ms.begin(), timing.busy_ms.end()) - timing.busy_ms.begin());
  return timing;
}

} // namespace actorpipe
