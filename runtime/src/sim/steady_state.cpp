/// SteadyState: what a micro-batch past the simulated ones adds (steady_state.hpp).

#include "sim/steady_state.hpp"

#include <algorithm>
#include <cmath>

namespace actorpipe::sim {

SteadyState::SteadyState(const Schedule& whole) {
  const std::size_t count = whole.micro_batch_sizes.size();
  for (const auto& list : whole.virtual_stage_actions()) {
    std::size_t actions = 0, held = 0, most = 0;
    bool input_gradient = false;
    for (const Action& a : list) {
      actions += per_micro_batch(a.op);
      input_gradient = input_gradient || a.op == Op::input_gradient;
      if (a.op == Op::forward) most = std::max(most, ++held);
      if (sends_gradient(a.op) && held > 0) --held;
    }
    actions_per_micro_batch_.push_back(count ? static_cast<double>(actions) / static_cast<double>(count) : 0.0);
    input_gradient_sends_.push_back(input_gradient);
    in_flight_.push_back(std::max<std::size_t>(most, 1));
  }
}

double SteadyState::Period::slowest_loop() const {
  double most = 0;
  for (const auto& [held, ms] : loops)
    most = std::max(most, ms);
  return most;
}

const SteadyState::Period& SteadyState::period_of(const Model& model, double samples) {
  const std::size_t S = model.stages;
  const double overhead = model.action_overhead_ms;
  processor_ms_.assign(model.processors, 0.0);
  lane_ms_.assign(model.lane_bytes_per_ms.size(), 0.0);
  period_.loops.clear();
  auto forward = [&](const Instance& i) { return overhead + i.forward_fixed_ms + samples * i.forward_ms_per_sample; };
  auto backward = [&](const Instance& i) { return i.backward_fixed_ms + samples * i.backward_ms_per_sample; };
  auto arrival = [&](const Route& route, double bytes_per_sample) {
    for (std::uint8_t l = 0; l < route.count; ++l)
      lane_ms_[route.lanes[l]] += samples * bytes_per_sample * route.share[l] / model.lane_bytes_per_ms[route.lanes[l]];
    return route.latency_ms + (std::isinf(route.bytes_per_ms) ? 0.0 : samples * bytes_per_sample / route.bytes_per_ms);
  };
  // Pipeline-major, each pipeline's stages in order: walked backwards, each stage's
  // loop is its own F and the gradient it sends, its sends, and the loop after it.
  double loop = 0;
  for (std::size_t i = model.instances.size(); i-- > 0;) {
    const Instance& instance = model.instances[i];
    const std::size_t s = instance.stage;
    processor_ms_[instance.processor] +=
        forward(instance) + (actions_per_micro_batch_[s] - 1) * overhead + backward(instance);
    const double forth = s + 1 < S ? arrival(instance.to_next, instance.send_bytes_per_sample) : 0.0;
    const double back = s > 0 ? arrival(instance.to_previous, instance.grad_bytes_per_sample) : 0.0;
    if (s + 1 == S) loop = 0;
    const double gradient =
        overhead + (input_gradient_sends_[s] ? instance.input_gradient_share : 1.0) * backward(instance);
    loop += forward(instance) + gradient + forth;
    period_.loops.push_back({in_flight_[s], loop / static_cast<double>(in_flight_[s])});
    loop += back;
  }
  period_.processors = processor_ms_.empty() ? 0.0 : *std::max_element(processor_ms_.begin(), processor_ms_.end());
  period_.lanes = lane_ms_.empty() ? 0.0 : *std::max_element(lane_ms_.begin(), lane_ms_.end());
  return period_;
}

double SteadyState::extra_ms(const Model& model, std::size_t simulated, std::size_t all,
                             const std::vector<std::pair<std::uint32_t, std::size_t>>& rest) {
  double total = 0;
  for (const auto& [size, count] : rest) {
    const Period& p = period_of(model, size);
    const double pace = std::max(p.processors, p.lanes);
    double slower = 0; // the slowest loop's, over the micro-batches it paces that were not simulated
    for (const auto& [held, ms] : p.loops) {
      const std::size_t from = std::max(held, simulated); // the first micro-batch it paces past them
      if (ms > pace && from < all)
        slower = std::max(slower, static_cast<double>(std::min(count, all - from)) * (ms - pace));
    }
    total += static_cast<double>(count) * pace + slower;
  }
  return total;
}

} // namespace actorpipe::sim
