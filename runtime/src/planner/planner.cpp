/// The planner's search over shapes; each shape is planned and priced by
/// planner/candidate.cpp.

#include <actorpipe/planner.hpp>

#include "planner/candidate.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

namespace actorpipe {

namespace {

using planning::Shape;

std::set<std::size_t> powers_of_two_up_to(std::size_t limit) {
  std::set<std::size_t> out;
  for (std::size_t v = 1; v <= limit; v *= 2)
    out.insert(v);
  return out;
}

/// The largest divisor of `batch` not above `limit` (at least 1).
std::size_t largest_divisor(std::uint32_t batch, std::size_t limit) {
  for (std::size_t p = std::min<std::size_t>(limit, batch); p > 1; --p)
    if (batch % p == 0) return p;
  return 1;
}

/// Every shape the job allows: fixed values are checked and kept, "auto" ones searched.
Result<std::vector<Shape>> shapes(const JobSpec& job, const planning::Planning& planning) {
  const ClusterSpec& cluster = job.cluster;
  const std::size_t devices = cluster.devices.size();
  const std::uint32_t batch = job.train.batch_size;
  const std::size_t units = job.profile.units(job.plan.sub_blocks).size();
  std::size_t fixed_stages = job.plan.stages;
  std::uint32_t fixed_micro_batches = job.plan.micro_batches;
  std::size_t fixed_pipelines = job.plan.pipelines;
  if (planning.schedule_file) {
    const Schedule& file = *planning.schedule_file;
    if (fixed_stages && fixed_stages != file.stages.size())
      return Error::bad_input(job.where("plan.stages") + std::to_string(fixed_stages) +
                              " stages, but the schedule file has " + std::to_string(file.stages.size()));
    fixed_stages = file.stages.size();
    fixed_micro_batches = static_cast<std::uint32_t>(file.micro_batch_sizes.size());
    if (batch % file.samples() != 0)
      return Error::bad_input(job.where("plan.schedule_file") + "its micro-batches hold " +
                              std::to_string(file.samples()) + " samples, which do not divide train.batch_size " +
                              std::to_string(batch));
    const std::size_t pipelines = batch / file.samples();
    if (fixed_pipelines && fixed_pipelines != pipelines)
      return Error::bad_input(job.where("plan.pipelines") + std::to_string(fixed_pipelines) +
                              " pipelines, but the schedule file's " + std::to_string(file.samples()) +
                              " samples per pipeline make " + std::to_string(pipelines));
    fixed_pipelines = pipelines;
  }

  if (fixed_pipelines > devices)
    return Error::bad_input(job.where("plan.pipelines") + std::to_string(fixed_pipelines) +
                            " pipelines need at least as many devices; cluster '" + cluster.name + "' has " +
                            std::to_string(devices));
  if (fixed_pipelines && batch % fixed_pipelines != 0)
    return Error::bad_input(job.where("train.batch_size") + std::to_string(batch) +
                            " samples do not split evenly over " + std::to_string(fixed_pipelines) + " pipelines");
  if (fixed_stages > units)
    return Error::bad_input(job.where("plan.stages") + std::to_string(fixed_stages) + " stages, but model '" +
                            job.profile.name + "' has only " + std::to_string(units) +
                            (job.plan.sub_blocks ? " blocks and sub-blocks" : " blocks"));
  if (fixed_stages && fixed_stages * std::max<std::size_t>(fixed_pipelines, 1) > devices)
    return Error::bad_input(job.where("plan.stages") + std::to_string(fixed_stages) + " stages × " +
                            std::to_string(std::max<std::size_t>(fixed_pipelines, 1)) + " pipelines need " +
                            std::to_string(fixed_stages * std::max<std::size_t>(fixed_pipelines, 1)) +
                            " devices; cluster '" + cluster.name + "' has " + std::to_string(devices));

  std::set<std::size_t> stage_options;
  if (fixed_stages)
    stage_options = {fixed_stages};
  else {
    const std::size_t limit = std::min(units, fixed_pipelines ? devices / fixed_pipelines : devices);
    stage_options = powers_of_two_up_to(limit);
    stage_options.insert(limit);
  }
  std::vector<Shape> out;
  for (std::size_t stages : stage_options) {
    std::set<std::size_t> pipeline_options;
    if (fixed_pipelines)
      pipeline_options = {fixed_pipelines};
    else {
      // More replicas almost always help throughput; a few smaller counts are tried in
      // case data-parallel traffic or memory says otherwise.
      for (std::size_t most = devices / stages, i = 0; i < 3 && most >= 1; ++i, most /= 2)
        pipeline_options.insert(largest_divisor(batch, most));
    }
    for (std::size_t pipelines : pipeline_options) {
      const std::uint32_t per_pipeline = batch / static_cast<std::uint32_t>(pipelines);
      std::set<std::uint32_t> micro_batch_options;
      if (fixed_micro_batches) {
        if (fixed_micro_batches > per_pipeline) {
          if (!fixed_pipelines) continue; // a smaller pipeline count may leave enough
          return Error::bad_input(job.where("plan.micro_batches") + std::to_string(fixed_micro_batches) +
                                  " micro-batches need at least as many samples per pipeline, but each of " +
                                  std::to_string(pipelines) + " gets " + std::to_string(per_pipeline));
        }
        micro_batch_options = {fixed_micro_batches};
      } else {
        for (std::size_t factor : {1, 2, 4})
          if (stages * factor <= per_pipeline) micro_batch_options.insert(static_cast<std::uint32_t>(stages * factor));
        if (micro_batch_options.empty()) micro_batch_options.insert(per_pipeline);
      }
      // Under plan.scheduler = "auto", each scheduler is one more dimension of the shape.
      const std::size_t schedulers = std::max<std::size_t>(planning.schedulers.size(), 1);
      for (std::uint32_t m : micro_batch_options)
        for (std::size_t k = 0; k < schedulers; ++k)
          out.push_back({stages, pipelines, m, k});
    }
  }
  if (out.empty())
    return Error::bad_input(job.where("plan.micro_batches") + std::to_string(fixed_micro_batches) +
                            " micro-batches need more samples per pipeline than train.batch_size " +
                            std::to_string(batch) + " leaves with any pipeline count");
  return out;
}

} // namespace

std::vector<std::uint32_t> split_batch(std::uint32_t samples, std::uint32_t micro_batches) {
  std::vector<std::uint32_t> sizes(micro_batches, samples / micro_batches);
  for (std::uint32_t i = 0; i < samples % micro_batches; ++i)
    ++sizes[i];
  return sizes;
}

Result<Plan> make_plan(const JobSpec& job, const PluginRegistry& plugins, const PlanProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  if (job.profile.blocks.empty())
    return Error::bad_input(job.where("model.profile") +
                            "no profile to plan with (`actorpipe profile JOB` measures one for a zoo model)");
  auto planning = planning::prepare(job, plugins);
  ACTORPIPE_TRY(planning);
  auto candidates = shapes(job, *planning);
  ACTORPIPE_TRY(candidates);

  // Where several shapes are searched, one a plugin refuses (a baseline that cuts whole
  // blocks asked for more stages than blocks) is skipped; the job fails only when no
  // shape can be planned, with the first refusal.
  struct Search {
    std::optional<planning::Candidate> best;
    std::optional<Error> first_error;
    std::size_t planned = 0;
    std::vector<std::pair<TriedShape, double>> tried; ///< with its overflow ratio, to rank as `better` does
  };
  const auto search = [&](const std::string& pass) -> Result<Search> {
    Search out;
    const double shapes_to_search = static_cast<double>(candidates->size());
    for (std::size_t k = 0; k < candidates->size(); ++k) {
      const Shape& shape = (*candidates)[k];
      std::function<void(double)> shape_progress;
      if (progress) {
        const std::string doing =
            "shape " + std::to_string(k + 1) + " of " + std::to_string(candidates->size()) + ": " +
            describe_shape(shape.stages, shape.pipelines, shape.micro_batches) +
            (planning->schedulers.size() > 1 ? ", " + planning->schedulers[shape.scheduler].name : "") + pass;
        shape_progress = [&progress, doing, k, shapes_to_search](double f) {
          progress((static_cast<double>(k) + std::clamp(f, 0.0, 1.0)) / shapes_to_search, doing);
        };
        shape_progress(0);
      }
      auto candidate = planning::evaluate(*planning, shape, shape_progress);
      if (!candidate) {
        if (candidates->size() == 1) return std::move(candidate).error();
        if (!out.first_error) out.first_error = std::move(candidate).error();
        continue;
      }
      ++out.planned;
      const Plan& p = candidate->plan;
      out.tried.push_back(
          {{shape.stages, shape.pipelines, shape.micro_batches,
            static_cast<std::uint32_t>(p.schedule.micro_batch_sizes.size() + 1 -
                                       std::min<std::size_t>(p.schedule.micro_batch_sizes.size(), shape.micro_batches)),
            p.iteration_time_ms, p.samples_per_s, !candidate->overflow, p.scheduler},
           candidate->overflow_ratio});
      if (!out.best || planning::better(*candidate, *out.best)) out.best = std::move(*candidate);
    }
    return out;
  };
  auto found = search("");
  ACTORPIPE_TRY(found);
  // A job that leaves plan.recompute unset recomputes where nothing fits otherwise, or
  // where memory binds what fits (the partitioner says memory placed its cuts, or a
  // device is at least `memory_bound` full: the cuts that balance the stages best may
  // not have fit), and the plan that recomputes is faster: selective first (the cheap,
  // memory-heavy units), then every unit.
  constexpr double memory_bound = 0.9;
  if (job.plan.recompute.empty())
    for (const Recompute more : {Recompute::selective, Recompute::full}) {
      if (found->best && !found->best->overflow && found->best->fullest < memory_bound && !found->best->memory_bound)
        break;
      planning->unset_recompute = more;
      auto again = search(std::string(", recompute ") + std::string(option_name(more)));
      ACTORPIPE_TRY(again);
      if (again->best && !again->best->overflow && (!found->best || planning::better(*again->best, *found->best)))
        found = std::move(again);
      else if (found->best && !found->best->overflow)
        break; // what recomputing more frees, the plan found has no use for
    }
  if (progress) progress(1.0, "done");
  auto& [best, first_error, planned, tried] = *found;
  if (!best) return std::move(*first_error);
  if (best->overflow)
    return Error::bad_input(
        job.file + ": no plan fits in memory" +
        (planned > 1 ? " (best of " + std::to_string(planned) + " shapes)" : "") + ": " + *best->overflow +
        "; try more stages, more micro-batches (smaller ones) or a schedule that stashes less" +
        (job.plan.recompute.empty() ? " (recomputing every stage's forward did not fit either)" : ""));
  Plan plan = std::move(best->plan);
  plan.candidates = planned;
  // Ranked as the search ranks candidates: fitting first, then faster, then less over.
  std::stable_sort(tried.begin(), tried.end(), [](const auto& a, const auto& b) {
    if (a.first.fits != b.first.fits) return a.first.fits;
    if (!a.first.fits) return a.second < b.second;
    return a.first.samples_per_s > b.first.samples_per_s;
  });
  for (std::size_t k = 0; k < tried.size() && k < Plan::tried_shapes_kept; ++k)
    plan.tried.push_back(tried[k].first);
  plan.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

} // namespace actorpipe
