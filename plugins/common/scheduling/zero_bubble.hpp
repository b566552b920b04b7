#pragma once

/// What the zero-bubble schedulers share: the stages' per-sample times from a request,
/// and the simulated iteration of a candidate schedule under them.

#include <actorpipe/plugin.hpp>
#include <actorpipe/schedule_builders.hpp>
#include <actorpipe/simulator.hpp>

namespace actorpipe::scheduling {

/// The request's times where it gives them for every (virtual) stage; else none
/// (equal F, I, W). The I's shares of the backwards, likewise.
inline StageTimes stage_times(const ScheduleRequest& request) {
  StageTimes times;
  const std::size_t stages = request.stages * request.chunking.chunks;
  if (request.stage_forward_ms.size() == stages && request.stage_backward_ms.size() == stages) {
    times.forward_ms = request.stage_forward_ms;
    times.backward_ms = request.stage_backward_ms;
    times.send_ms = request.send_ms;
  }
  if (request.stage_input_gradient_share.size() == stages)
    times.input_gradient_share = request.stage_input_gradient_share;
  return times;
}

/// The iteration `schedule` takes under the request's times (equal F, I, W without
/// them, a chunk taking its share of a stage's).
inline double simulated_ms(const Schedule& schedule, const ScheduleRequest& request) {
  const StageTimes times = stage_times(request);
  const bool given = !times.forward_ms.empty();
  const std::size_t stages = schedule.virtual_stages();
  const double share = 1.0 / schedule.chunks;
  return simulate_pipeline(schedule, given ? times.forward_ms : std::vector<double>(stages, share),
                           given ? times.backward_ms : std::vector<double>(stages, 2 * share),
                           given ? times.send_ms : std::vector<double>{}, request.action_overhead_ms,
                           times.input_gradient_share)
      .makespan_ms;
}

} // namespace actorpipe::scheduling
