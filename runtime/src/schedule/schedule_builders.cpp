#include <actorpipe/schedule_builders.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

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

Schedule zb_h1_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes) {
  Schedule schedule = one_f_one_b_schedule(stages, sizes);
  schedule.name = "zb-h1";
  for (std::size_t s = 0; s < stages; ++s) {
    std::vector<Action> split;
    std::deque<std::size_t> deferred;
    for (const Action& a : schedule.stages[s]) {
      if (a.op != Op::backward) {
        split.push_back(a);
        continue;
      }
      split.push_back({Op::input_gradient, a.micro_batch, a.size});
      deferred.push_back(a.micro_batch);
      // Stage s holds up to stages − s micro-batches in 1F1B: s more Ws in waiting keep
      // it within stage 0's stages.
      for (; deferred.size() > s; deferred.pop_front())
        split.push_back({Op::weight_gradient, deferred.front(), sizes[deferred.front()]});
    }
    for (const std::size_t k : deferred)
      split.push_back({Op::weight_gradient, k, sizes[k]});
    schedule.stages[s] = std::move(split);
  }
  return schedule;
}

namespace {

/// One stage's state while a zero-bubble schedule is played out.
struct ZeroBubbleStage {
  double free_at = 0; ///< when it can start its next action
  std::size_t next_forward = 0;
  std::vector<double> forward_in;   ///< by micro-batch: when its input arrives (NaN: not yet known)
  std::vector<double> gradient_in;  ///< likewise its output's gradient
  std::vector<char> input_done;     ///< its I has run
  std::deque<std::size_t> deferred; ///< Is run whose W has not, oldest first
  std::uint64_t held = 0;           ///< samples forwarded and not yet W'd
  std::size_t weights_done = 0;
  bool blocked = false;  ///< nothing was ready when it last looked
  double blocked_at = 0; ///< when that was
};

constexpr double unknown = std::numeric_limits<double>::quiet_NaN();

} // namespace

Schedule zero_bubble_schedule(std::string name, std::size_t stages, const std::vector<std::uint32_t>& sizes,
                              std::size_t limit, const StageTimes& times) {
  Schedule schedule = empty_schedule(std::move(name), stages, sizes);
  const std::size_t m = sizes.size();
  if (stages == 0 || m == 0) return schedule;
  const std::uint64_t reference = *std::max_element(sizes.begin(), sizes.end());
  const std::uint64_t bound = std::max<std::size_t>(limit, 1) * reference;
  const auto forward_ms = [&](std::size_t s, std::size_t k) {
    return sizes[k] * (s < times.forward_ms.size() ? times.forward_ms[s] : 1.0);
  };
  const auto backward_ms = [&](std::size_t s, std::size_t k, Op op) {
    return sizes[k] * backward_share(op) * (s < times.backward_ms.size() ? times.backward_ms[s] : 2.0);
  };
  const auto send_ms = [&](std::size_t boundary, std::size_t k) {
    return sizes[k] * (boundary < times.send_ms.size() ? times.send_ms[boundary] : 0.0);
  };
  std::vector<ZeroBubbleStage> st(stages);
  for (ZeroBubbleStage& stage : st) {
    stage.forward_in.assign(m, unknown);
    stage.gradient_in.assign(m, unknown);
    stage.input_done.assign(m, 0);
  }
  for (std::size_t k = 0; k < m; ++k)
    st[0].forward_in[k] = 0; // the batch is there from the start
  // A blocked stage wakes when an input reaches it: at once, or when it arrives.
  const auto arrive = [&](std::size_t s, double& slot, double when) {
    slot = when;
    if (st[s].blocked) st[s].free_at = std::min(st[s].free_at, std::max(when, st[s].blocked_at));
  };
  const auto finished = [&](const ZeroBubbleStage& stage) { return stage.weights_done == m; };
  for (;;) {
    // The stage that decides next is the one free earliest: every input that arrives
    // by then comes from an action decided before.
    std::size_t s = stages;
    for (std::size_t i = 0; i < stages; ++i)
      if (!finished(st[i]) && !std::isinf(st[i].free_at) && (s == stages || st[i].free_at < st[s].free_at)) s = i;
    if (s == stages) break;
    ZeroBubbleStage& stage = st[s];
    const double now = stage.free_at;
    auto& actions = schedule.stages[s];
    std::optional<std::size_t> input;
    for (std::size_t k = 0; k < m && !input; ++k)
      if (!stage.input_done[k] && k < stage.next_forward && !std::isnan(stage.gradient_in[k]) &&
          stage.gradient_in[k] <= now)
        input = k;
    const std::size_t f = stage.next_forward;
    const bool can_forward = f < m && !std::isnan(stage.forward_in[f]) && stage.forward_in[f] <= now &&
                             (stage.held == 0 || stage.held + sizes[f] <= bound);
    if (input) {
      const std::size_t k = *input;
      actions.push_back({Op::input_gradient, k, sizes[k]});
      stage.free_at = now + backward_ms(s, k, Op::input_gradient);
      stage.input_done[k] = 1;
      stage.deferred.push_back(k);
      if (s > 0) arrive(s - 1, st[s - 1].gradient_in[k], stage.free_at + send_ms(s - 1, k));
    } else if (can_forward) {
      actions.push_back(forward(sizes, f));
      stage.free_at = now + forward_ms(s, f);
      stage.held += sizes[f];
      ++stage.next_forward;
      if (s + 1 < stages)
        arrive(s + 1, st[s + 1].forward_in[f], stage.free_at + send_ms(s, f));
      else
        stage.gradient_in[f] = stage.free_at; // the loss is where the forward ends
    } else if (!stage.deferred.empty()) {
      const std::size_t k = stage.deferred.front();
      stage.deferred.pop_front();
      actions.push_back({Op::weight_gradient, k, sizes[k]});
      stage.free_at = now + backward_ms(s, k, Op::weight_gradient);
      stage.held -= sizes[k];
      ++stage.weights_done;
    } else {
      // Nothing to do until an input arrives: the earliest one known, or one not yet sent.
      double wake = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < stage.next_forward; ++k)
        if (!stage.input_done[k] && !std::isnan(stage.gradient_in[k])) wake = std::min(wake, stage.gradient_in[k]);
      if (f < m && !std::isnan(stage.forward_in[f]) && (stage.held == 0 || stage.held + sizes[f] <= bound))
        wake = std::min(wake, stage.forward_in[f]);
      stage.blocked = true;
      stage.blocked_at = now;
      stage.free_at = std::max(wake, now);
      continue;
    }
    stage.blocked = false;
  }
  return schedule;
}

} // namespace actorpipe
