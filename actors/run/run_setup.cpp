/// prepare_run(): the sync executor, job config and emulation of a run.

#include "run/run_setup.hpp"

#include <actorpipe/plugin_registry.hpp>

#include "sim/emulated_links.hpp"
#include "sim/stage_figures.hpp"
#include "sync/stepping.hpp"

namespace actorpipe::actors {

namespace {

/// The plan's sync policy, from the registry the plan was made with, or found where
/// the planner finds plugins.
Result<std::shared_ptr<SyncPolicy>> sync_policy(const JobSpec& job, const Plan& plan, const RunOptions& options) {
  std::optional<PluginRegistry> discovered;
  const PluginRegistry* registry = options.plugins;
  if (!registry) {
    auto found = PluginRegistry::discover(PluginRegistry::search_path(job.plan.plugin_path));
    ACTORPIPE_TRY(found);
    discovered.emplace(std::move(*found));
    registry = &*discovered;
  }
  auto policy = registry->sync_policy(plan.sync);
  if (!policy) return Error::bad_input(job.where("plan.sync") + policy.error().message);
  return *policy; // holds its module open past the registry
}

} // namespace

Result<std::unique_ptr<RunSetup>> prepare_run(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                              train::Session& session) {
  auto setup = std::make_unique<RunSetup>();
  std::shared_ptr<SyncPolicy> policy; // with replicas to sync
  if (plan.pipelines > 1) {
    auto found = sync_policy(job, plan, options);
    ACTORPIPE_TRY(found);
    policy = std::move(*found);
  }

  std::shared_ptr<const Stragglers> stragglers; // on the emulated devices
  if (!job.emulation.stragglers.empty()) {
    auto parsed = parse_stragglers(job.emulation.stragglers, job.cluster);
    if (!parsed) return Error::bad_input(job.where("emulation.stragglers") + parsed.error().message);
    parsed->seed = job.job.seed;
    stragglers = std::make_shared<const Stragglers>(std::move(*parsed));
  }

  setup->job.plan = plan;
  setup->job.clipping = job.train.clip_norm > 0;
  setup->job.computation = [&session](std::size_t p, std::size_t s) -> train::StageComputation& {
    return session.worker(p, s);
  };
  if (policy) {
    const std::uint64_t share = plan.schedule.samples();
    const auto options_it = job.plan.options.find(plan.sync);
    setup->sync.emplace(policy, "sync '" + plan.sync + "'",
                        options_it == job.plan.options.end() ? PluginOptions{} : options_it->second, plan.pipelines,
                        plan.stages.size(), static_cast<double>(share) / plan.batch_size, job.train.buffers,
                        [&session](std::size_t s) { return session.replicas(s); });
  }
  setup->job.sync = [sync = &setup->sync](std::size_t s, std::uint64_t step) { return (*sync)->run(s, step); };
  if (setup->sync) {
    setup->job.step_ahead = [sync = &setup->sync](std::size_t s, std::size_t p, std::uint64_t step) {
      return (*sync)->step_ahead(s, p, step);
    };
    std::optional<actorpipe::SyncRound> asynchronous;
    try {
      asynchronous = setup->sync->asynchronous();
    } catch (const std::exception& e) {
      return Error::bad_input(job.where("plan.sync") + e.what());
    }
    // The one place the run's sync mode is chosen.
    if (asynchronous && asynchronous->kind == actorpipe::SyncRound::Kind::scheduled_averaging)
      setup->job.mode = ScheduledAveraging{asynchronous->scheduling};
    if (asynchronous && asynchronous->kind == actorpipe::SyncRound::Kind::parameter_server)
      setup->job.mode = ParameterServer{asynchronous->staleness};
    if (asynchronous && asynchronous->kind == actorpipe::SyncRound::Kind::elastic_asynchronous)
      setup->job.mode = ElasticAveraging{asynchronous->period};
    // Planning refused this already; a plan made elsewhere (a worker's) is checked too.
    if (asynchronous)
      if (auto problem = sync::clipping_problem(job.train.clip_norm, asynchronous->kind, plan.pipelines))
        return Error::bad_input(job.where("train.clip_norm") + *problem + " (plan.sync = \"" + plan.sync + "\")");
    setup->job.snapshot = [sync = &setup->sync](std::size_t s, std::size_t p) { (*sync)->snapshot(s, p); };
    setup->job.average = [sync = &setup->sync](std::size_t s, const std::vector<std::size_t>& group) {
      (*sync)->average(s, group);
    };
    setup->job.correct = [sync = &setup->sync](std::size_t s, std::size_t p) { (*sync)->correct(s, p); };
    setup->job.serve = [sync = &setup->sync](std::size_t s, const std::vector<std::size_t>& pushers) {
      (*sync)->serve(s, pushers);
    };
  }
  // Stages on emulated devices take their modelled times, dilated; the run's times are
  // reported in modelled time.
  {
    std::vector<Cut> cuts;
    std::vector<Recompute> recompute;
    for (const StagePlan& stage : plan.stages) {
      cuts.push_back(stage.begin);
      recompute.push_back(stage.recompute);
    }
    cuts.push_back(plan.stages.back().end);
    const std::vector<StageFigures> figures = stage_figures(job.profile, cuts, recompute);
    setup->job.emulated.assign(plan.pipelines, std::vector<std::optional<StageConfig::Emulated>>(plan.stages.size()));
    // Stage s of pipeline p's device, when it is emulated.
    auto emulated = [&](std::size_t p, std::size_t s) -> std::optional<DeviceId> {
      if (s >= plan.stages.size() || job.cluster.devices[plan.devices[p][s]].kind != "emulated") return std::nullopt;
      return plan.devices[p][s];
    };
    std::shared_ptr<sim::EmulatedLinks> links;
    for (std::size_t p = 0; p < plan.pipelines; ++p)
      for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        const Device& device = job.cluster.devices[plan.devices[p][s]];
        if (device.kind != "emulated") continue;
        const StageFigures& f = figures[s];
        // Each action also takes the plan's fixed cost per action, as the simulator has
        // every device take it (launches, messages).
        const double overhead = job.plan.action_overhead_ms;
        setup->job.emulated[p][s] =
            StageConfig::Emulated{.forward_fixed_ms = f.forward_fixed_ms / device.speed + overhead,
                                  .forward_ms_per_sample = f.forward_ms / device.speed,
                                  .backward_fixed_ms = f.backward_fixed_ms / device.speed + overhead,
                                  .backward_ms_per_sample = f.backward_ms / device.speed,
                                  .input_gradient_share = f.input_gradient_share,
                                  .dilation = job.emulation.dilation,
                                  .device = plan.devices[p][s],
                                  .stragglers = stragglers,
                                  .previous_device = s > 0 ? emulated(p, s - 1) : std::nullopt,
                                  .next_device = emulated(p, s + 1)};
        if (!links) links = std::make_shared<sim::EmulatedLinks>(job.cluster);
        setup->job.emulated[p][s]->links = links;
        setup->time_scale = 1 / job.emulation.dilation;
      }
    // A lockstep stage whose replicas are all emulated all-reduces over their ring.
    for (std::size_t s = 0; s < plan.stages.size() && plan.pipelines > 1; ++s) {
      std::vector<DeviceId> ring;
      for (std::size_t p = 0; p < plan.pipelines; ++p)
        if (emulated(p, s)) ring.push_back(plan.devices[p][s]);
      if (ring.size() < plan.pipelines) continue;
      for (std::size_t p = 0; p < plan.pipelines; ++p) {
        setup->job.emulated[p][s]->replica_devices = ring;
        setup->job.emulated[p][s]->parameter_bytes = figures[s].parameter_bytes;
      }
    }
  }
  setup->job.time_scale = setup->time_scale;
  return setup;
}

} // namespace actorpipe::actors
