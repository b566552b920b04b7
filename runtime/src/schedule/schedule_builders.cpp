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
    for (std::size_t k = 0; k < sizes.size(); ++k)
      actions.push_back(forward(sizes, k));
    for (std::size_t k = 0; k < sizes.size(); ++k)
      actions.push_back(backward(sizes, k));
  }
  return schedule;
}

namespace {

/// 1F1B with stage s holding up to `stages − s + ahead` reference micro-batches.
Schedule bounded_one_f_one_b(const char* name, std::size_t stages, const std::vector<std::uint32_t>& sizes,
                             std::uint32_t reference, std::size_t ahead) {
  Schedule schedule = empty_schedule(name, stages, sizes);
  if (reference == 0 && !sizes.empty()) reference = *std::max_element(sizes.begin(), sizes.end());
  const std::size_t m = sizes.size();
  for (std::size_t s = 0; s < stages; ++s) {
    // Stage s may hold the samples of stages − s (+ ahead) reference micro-batches.
    // Warm-up runs forwards up to one micro-batch short of that; then each forward is
    // followed by backwards until the next forward fits again (one, when sizes are equal).
    const std::uint64_t bound = static_cast<std::uint64_t>(stages - s + ahead) * reference;
    auto& actions = schedule.stages[s];
    std::uint64_t held = 0;
    std::size_t next_forward = 0, next_backward = 0;
    while (next_forward < m && held + sizes[next_forward] + reference <= bound) {
      held += sizes[next_forward];
      actions.push_back(forward(sizes, next_forward++));
    }
    while (next_forward < m) {
      held += sizes[next_forward];
      actions.push_back(forward(sizes, next_forward++));
      do {
        held -= sizes[next_backward];
        actions.push_back(backward(sizes, next_backward++));
      } while (next_forward < m && next_backward < next_forward && held + sizes[next_forward] > bound);
    }
    while (next_backward < m)
      actions.push_back(backward(sizes, next_backward++));
  }
  return schedule;
}

} // namespace

Schedule one_f_one_b_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes, std::uint32_t reference) {
  return bounded_one_f_one_b("1f1b", stages, sizes, reference, 0);
}

Schedule advance_forward_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes, std::size_t ahead,
                                  std::uint32_t reference) {
  return bounded_one_f_one_b("afp", stages, sizes, reference, ahead);
}

} // namespace actorpipe
