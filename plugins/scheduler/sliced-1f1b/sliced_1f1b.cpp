/// Scheduler `sliced-1f1b` (AutoPipe): 1F1B whose first micro-batch is cut into k
/// equal slices, so that stage s + 1 starts after a slice instead of a whole
/// micro-batch and the pipeline fills sooner.
///
/// Slicing shortens the fill by (1 − 1/k) of the time the first micro-batch takes to
/// reach the last stage, A = b · Σ_{s<p−1} (forward_s + send_s) per sample, but every
/// extra slice costs each stage one more forward and backward, 2 · overhead on the
/// critical stage. k minimises A/k + 2(k − 1) · overhead over 1..max_slices (and at
/// most b, one sample per slice); option `slices` fixes k instead. Warm-up is counted
/// in samples, so the slices together hold no more activations than the micro-batch.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>

#include <algorithm>

namespace {

using namespace actorpipe;

std::uint32_t choose_slices(const ScheduleRequest& request, std::uint32_t first, std::uint32_t max_slices) {
  double fill_per_sample = 0;
  for (std::size_t s = 0; s + 1 < request.stages; ++s)
    fill_per_sample += request.stage_forward_ms[s] + (s < request.send_ms.size() ? request.send_ms[s] : 0.0);
  const double fill = fill_per_sample * first;
  // Each slice beyond the first is one more forward and backward at every stage, each
  // paying the fixed costs; the busiest stage's set the price.
  double extra_slice = 0;
  for (std::size_t s = 0; s < request.stage_forward_fixed_ms.size() && s < request.stage_backward_fixed_ms.size(); ++s)
    extra_slice = std::max(extra_slice, request.stage_forward_fixed_ms[s] + request.stage_backward_fixed_ms[s]);
  extra_slice += 2.0 * request.action_overhead_ms;
  std::uint32_t best = 1;
  double best_cost = fill;
  for (std::uint32_t k = 2; k <= std::min(max_slices, first); ++k) {
    const double cost = fill / k + (k - 1) * extra_slice;
    if (cost < best_cost - 1e-12) {
      best = k;
      best_cost = cost;
    }
  }
  return best;
}

class SlicedOneFOneBScheduler : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"slices", "max_slices"}));
    auto fixed = number_option(request.options, "slices", 0, 0, 1 << 20);
    ACTORPIPE_TRY(fixed);
    auto max_slices = number_option(request.options, "max_slices", 8, 1, 1 << 20);
    ACTORPIPE_TRY(max_slices);
    if (request.micro_batch_sizes.empty() || request.stage_forward_ms.size() != request.stages)
      return Error::bad_input("needs the stages' forward times and at least one micro-batch");

    const std::uint32_t first = request.micro_batch_sizes.front();
    const std::uint32_t slices = *fixed > 0 ? std::min<std::uint32_t>(static_cast<std::uint32_t>(*fixed), first)
                                            : choose_slices(request, first, static_cast<std::uint32_t>(*max_slices));
    std::vector<std::uint32_t> sizes;
    for (std::uint32_t i = 0; i < slices; ++i)
      sizes.push_back(first / slices + (i < first % slices ? 1 : 0));
    sizes.insert(sizes.end(), request.micro_batch_sizes.begin() + 1, request.micro_batch_sizes.end());
    const std::uint32_t reference =
        *std::max_element(request.micro_batch_sizes.begin(), request.micro_batch_sizes.end());
    Schedule schedule = one_f_one_b_schedule(request.stages, sizes, reference);
    schedule.name = "sliced-1f1b";
    return schedule;
  }
};

} // namespace

ACTORPIPE_PLUGIN(SlicedOneFOneBScheduler, "sliced-1f1b", "1.0.0",
                 "1F1B with the first micro-batch sliced so the pipeline fills sooner (AutoPipe)")
