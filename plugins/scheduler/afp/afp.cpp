/// Scheduler `afp` (AvgPipe's advance forward propagation): 1F1B whose stage s may run
/// `ahead` forwards of later micro-batches beyond 1F1B's stages − s, into time it would
/// otherwise spend waiting for a gradient (advance_forward_schedule). Options: `ahead`,
/// a count, or "auto" (the default): the pipeline is simulated for ahead = 0, 1, … up to
/// `max_ahead` (default 2: at most two micro-batches' activations more than 1F1B per
/// stage), and the least ahead within 1% of the fastest is taken, holding no more
/// activations than the time needs.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

#include <algorithm>

namespace {

using namespace actorpipe;

class AfpScheduler : public Scheduler {
public:
  Result<Schedule> schedule(const ScheduleRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"ahead", "max_ahead"}));
    const std::size_t m = request.micro_batch_sizes.size();
    if (m == 0) return Error::bad_input("needs at least one micro-batch");
    const auto given = request.options.find("ahead");
    if (given != request.options.end() && given->second != "auto") {
      auto ahead = number_option(request.options, "ahead", 0, 0, 1 << 20);
      ACTORPIPE_TRY(ahead);
      return advance_forward_schedule(request.stages, request.micro_batch_sizes, static_cast<std::size_t>(*ahead));
    }
    auto max_ahead = number_option(request.options, "max_ahead", 2, 0, 1 << 20);
    ACTORPIPE_TRY(max_ahead);
    if (request.stage_forward_ms.size() != request.stages || request.stage_backward_ms.size() != request.stages)
      return Error::bad_input("ahead = \"auto\" needs the stages' forward and backward times");
    // Beyond m − 1 every order is GPipe's.
    const std::size_t last = std::min(static_cast<std::size_t>(*max_ahead), m - 1);
    std::vector<double> makespan;
    std::vector<Schedule> candidates;
    for (std::size_t ahead = 0; ahead <= last; ++ahead) {
      candidates.push_back(advance_forward_schedule(request.stages, request.micro_batch_sizes, ahead));
      makespan.push_back(simulate_pipeline(candidates.back(), request.stage_forward_ms, request.stage_backward_ms,
                                           request.send_ms, request.action_overhead_ms)
                             .makespan_ms);
    }
    const double best = *std::min_element(makespan.begin(), makespan.end());
    std::size_t chosen = 0;
    while (makespan[chosen] > best * 1.01)
      ++chosen;
    return candidates[chosen];
  }
};

} // namespace

ACTORPIPE_PLUGIN(AfpScheduler, "afp", "1.0.0",
                 "advance forward propagation: 1F1B with forwards run ahead into waits, as far as pays (AvgPipe)")
