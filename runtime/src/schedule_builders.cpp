#include <actorpipe/schedule_builders.hpp>

#include <algorithm>

namespace actorpipe {

namespace {

Schedule empty_schedule(std::string name, std::size_t stages, const std::vector<std::uint32_t>& sizes) {
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.micro_batch_sizes = sizes;
  schedule.stages.resize(stages);
  return schedule;
}

Action forward(const std::vector<std::uint32_t>& sizes, std::size_t k) { return {Op::forward, k, sizes[k]}; }
Action backward(const std::vector<std::uint32_t>& sizes, std::size_t k) { return {Op::backward, k, sizes[k]}; }

} // namespace

Schedule gpipe_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes) {
  Schedule schedule = empty_schedule("gpipe", stages, sizes);
  for (auto& actions : schedule.stages) {
    for (std::size_t k = 0; k < sizes.size(); ++k) actions.push_back(forward(sizes, k));
    for (std::size_t k = 0; k < sizes.size(); ++k) actions.push_back(backward(sizes, k));
  }
  return schedule;
}

Schedule one_f_one_b_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes, std::uint32_t reference) {
  Schedule schedule = empty_schedule("1f1b", stages, sizes);
  if (reference == 0 && !sizes.empty()) reference = *std::max_element(sizes.begin(), sizes.end());
  const std::size_t m = sizes.size();
  for (std::size_t s = 0; s < stages; ++s) {
    // Warm-up: the forwards that fit in (stages − s − 1) reference micro-batches; the
    // steady state's next forward brings the stage to its bound of stages − s.
    const std::uint64_t budget = static_cast<std::uint64_t>(stages - s - 1) * reference;
    std::size_t warm_up = 0;
    for (std::uint64_t held = 0; warm_up < m && held + sizes[warm_up] <= budget; ++warm_up) held += sizes[warm_up];
    auto& actions = schedule.stages[s];
    for (std::size_t k = 0; k < warm_up; ++k) actions.push_back(forward(sizes, k));
    std::size_t next_backward = 0;
    for (std::size_t k = warm_up; k < m; ++k) {
      actions.push_back(forward(sizes, k));
      actions.push_back(backward(sizes, next_backward++));
    }
    while (next_backward < m) actions.push_back(backward(sizes, next_backward++));
  }
  return schedule;
}

} // namespace actorpipe
