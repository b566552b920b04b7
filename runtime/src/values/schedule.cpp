/// Schedule validation: counts and sizes first, then a dry run of the stages' action
/// lists in dependency order that either finishes or names what waits on what.

#include <actorpipe/schedule.hpp>

#include <algorithm>
#include <numeric>

namespace actorpipe {

namespace {

std::string stage_name(std::size_t s) { return "stage " + std::to_string(s); }

/// Counts, sizes and order on one stage: each micro-batch's F once, then its B once or
/// its I and then its W once each.
Status check_stage(const Schedule& schedule, std::size_t s) {
  const std::size_t m = schedule.micro_batch_sizes.size();
  std::vector<int> forwards(m, 0), backwards(m, 0), inputs(m, 0), weights(m, 0);
  const auto& actions = schedule.stages[s];
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    const std::string where = "schedule '" + schedule.name + "': " + stage_name(s) + " action " + std::to_string(i) +
                              " (" + to_string(a) + "): ";
    if (a.micro_batch >= m)
      return Error::bad_input(where + "micro-batch " + std::to_string(a.micro_batch) + " does not exist (there are " +
                              std::to_string(m) + ")");
    if (a.size != schedule.micro_batch_sizes[a.micro_batch])
      return Error::bad_input(where + "size " + std::to_string(a.size) + " differs from micro-batch " +
                              std::to_string(a.micro_batch) + "'s " +
                              std::to_string(schedule.micro_batch_sizes[a.micro_batch]));
    const std::size_t k = a.micro_batch;
    switch (a.op) {
    case Op::forward:
      if (++forwards[k] > 1) return Error::bad_input(where + "a second forward of the micro-batch");
      break;
    case Op::backward:
    case Op::input_gradient:
      if (forwards[k] == 0) return Error::bad_input(where + "a backward before the micro-batch's forward");
      if (backwards[k] + inputs[k] > 0) return Error::bad_input(where + "a second backward of the micro-batch");
      ++(a.op == Op::backward ? backwards : inputs)[k];
      break;
    case Op::weight_gradient:
      if (inputs[k] == 0)
        return Error::bad_input(where + (backwards[k]
                                             ? "a weight gradient of a micro-batch whose backward was whole (B)"
                                             : "a weight gradient before the micro-batch's input gradient (I)"));
      if (++weights[k] > 1) return Error::bad_input(where + "a second weight gradient of the micro-batch");
      break;
    }
  }
  for (std::size_t k = 0; k < m; ++k) {
    const char* missing = forwards[k] == 0                   ? "forward"
                          : backwards[k] + inputs[k] == 0    ? "backward"
                          : inputs[k] > 0 && weights[k] == 0 ? "weight gradient (W, after its I)"
                                                             : nullptr;
    if (missing)
      return Error::bad_input("schedule '" + schedule.name + "': " + stage_name(s) + " never runs the " + missing +
                              " of micro-batch " + std::to_string(k));
  }
  return Ok{};
}

/// "F3" for forward 3; the action that `a` waits for on the neighbouring stage.
std::string awaited(const Action& a) {
  return a.op == Op::forward ? to_string(a)
                             : "B" + std::to_string(a.micro_batch) + " or I" + std::to_string(a.micro_batch);
}

} // namespace

std::uint64_t Schedule::samples() const {
  return std::accumulate(micro_batch_sizes.begin(), micro_batch_sizes.end(), std::uint64_t{0});
}

std::string to_string(const Action& action) {
  static constexpr char letters[] = {'F', 'B', 'I', 'W'};
  return letters[static_cast<std::size_t>(action.op)] + std::to_string(action.micro_batch);
}

Status validate(const Schedule& schedule) {
  const std::size_t stages = schedule.stages.size();
  const std::size_t m = schedule.micro_batch_sizes.size();
  if (stages == 0) return Error::bad_input("schedule '" + schedule.name + "': has no stages");
  if (m == 0) return Error::bad_input("schedule '" + schedule.name + "': has no micro-batches");
  for (std::size_t k = 0; k < m; ++k)
    if (schedule.micro_batch_sizes[k] == 0)
      return Error::bad_input("schedule '" + schedule.name + "': micro-batch " + std::to_string(k) + " is empty");
  for (std::size_t s = 0; s < stages; ++s)
    if (auto status = check_stage(schedule, s); !status) return status;

  // Dry run: done[s][op][k] marks finished actions; a stage advances while its next
  // action's input is there. A stage that advances wakes its neighbours.
  std::vector<std::vector<char>> forward_done(stages, std::vector<char>(m, 0)), backward_done = forward_done;
  std::vector<std::size_t> next(stages, 0);
  // backward_done marks the gradient a stage sent back (its B or I); a W waits for
  // nothing from elsewhere, its I coming before it in the stage's own list.
  auto ready = [&](std::size_t s) {
    const Action& a = schedule.stages[s][next[s]];
    if (a.op == Op::forward) return s == 0 || forward_done[s - 1][a.micro_batch] != 0;
    if (a.op == Op::weight_gradient) return true;
    return s + 1 == stages || backward_done[s + 1][a.micro_batch] != 0;
  };
  std::vector<std::size_t> work(stages);
  std::iota(work.begin(), work.end(), std::size_t{0});
  while (!work.empty()) {
    const std::size_t s = work.back();
    work.pop_back();
    bool advanced = false;
    while (next[s] < schedule.stages[s].size() && ready(s)) {
      const Action& a = schedule.stages[s][next[s]++];
      if (a.op == Op::forward)
        forward_done[s][a.micro_batch] = 1;
      else if (sends_gradient(a.op))
        backward_done[s][a.micro_batch] = 1;
      advanced = true;
    }
    if (advanced) {
      if (s > 0) work.push_back(s - 1);
      if (s + 1 < stages) work.push_back(s + 1);
    }
  }

  std::string waiting;
  for (std::size_t s = 0; s < stages; ++s) {
    if (next[s] == schedule.stages[s].size()) continue;
    const Action& a = schedule.stages[s][next[s]];
    const std::size_t from = a.op == Op::forward ? s - 1 : s + 1;
    waiting += (waiting.empty() ? "" : "; ") + stage_name(s) + " waits at " + to_string(a) + " for " + awaited(a) +
               " of " + stage_name(from);
  }
  if (!waiting.empty()) return Error::bad_input("schedule '" + schedule.name + "': deadlock: " + waiting);
  return Ok{};
}

std::vector<std::uint64_t> peak_stashed_samples(const Schedule& schedule) {
  std::vector<std::uint64_t> peaks;
  for (const auto& actions : schedule.stages) {
    std::uint64_t held = 0, peak = 0;
    for (const Action& a : actions) {
      if (a.op == Op::forward)
        peak = std::max(peak, held += a.size);
      else if (a.op != Op::input_gradient)
        held -= std::min<std::uint64_t>(held, a.size);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

} // namespace actorpipe
