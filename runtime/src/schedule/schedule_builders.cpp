#include <actorpipe/schedule_builders.hpp>

#include <actorpipe/model_profile.hpp>

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

Schedule interleaved_one_f_one_b_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes,
                                          std::uint32_t chunks) {
  Schedule schedule = empty_schedule("interleaved-1f1b", stages, sizes);
  schedule.chunks = std::max<std::uint32_t>(chunks, 1);
  const std::size_t m = sizes.size(), v = schedule.chunks;
  // Every device takes the micro-batches in groups of `stages`; where they do not
  // divide evenly, in as many groups as `stages` fits, the first ones a micro-batch
  // bigger (a group smaller than the devices would want a chunk's output back before it
  // has gone round them). A group's forwards on chunk 0, then on chunk 1, …; its
  // backwards from the last chunk down.
  struct Unit {
    std::size_t micro_batch;
    std::uint32_t chunk;
  };
  std::vector<Unit> forwards, backwards;
  const std::size_t groups = std::max<std::size_t>(1, m / std::max<std::size_t>(stages, 1));
  const std::size_t first_group = (m + groups - 1) / groups;
  for (std::size_t g = 0, group = 0; g < groups; ++g) {
    const std::size_t end = group + m / groups + (g < m % groups ? 1 : 0);
    for (std::uint32_t c = 0; c < v; ++c)
      for (std::size_t k = group; k < end; ++k)
        forwards.push_back({k, c});
    for (std::uint32_t c = static_cast<std::uint32_t>(v); c-- > 0;)
      for (std::size_t k = group; k < end; ++k)
        backwards.push_back({k, c});
    group = end;
  }
  const std::size_t total = forwards.size();
  for (std::size_t d = 0; d < stages; ++d) {
    // Megatron's warm-up: two per device to the end, and a group's worth per further
    // chunk; then one forward and one backward in turn; then the backwards left.
    const std::size_t warm_up = std::min(total, (stages - d - 1) * 2 + (v - 1) * first_group);
    auto& actions = schedule.stages[d];
    std::size_t f = 0, b = 0;
    const auto push = [&](Op op, const Unit& u) {
      actions.push_back({op, u.micro_batch, sizes[u.micro_batch], u.chunk});
    };
    // Forwards issued, by micro-batch and chunk: a backward waits on its device for
    // its own forward, which the bigger last group can push past the pairing.
    std::vector<char> forwarded(m * v, 0);
    const auto push_forward = [&] {
      forwarded[forwards[f].micro_batch * v + forwards[f].chunk] = 1;
      push(Op::forward, forwards[f++]);
    };
    while (f < warm_up)
      push_forward();
    while (f < total) {
      push_forward();
      while (f < total && !forwarded[backwards[b].micro_batch * v + backwards[b].chunk])
        push_forward();
      push(Op::backward, backwards[b++]);
    }
    for (; b < total; ++b)
      push(Op::backward, backwards[b]);
  }
  return schedule;
}

namespace {

/// One device's state while a zero-bubble schedule is played out.
struct ZeroBubbleDevice {
  double free_at = 0; ///< when it can start its next action
  struct Deferred {
    std::size_t micro_batch;
    std::uint32_t chunk;
  };
  std::deque<Deferred> deferred; ///< Is run whose W has not, oldest first
  std::uint64_t held = 0;        ///< chunk samples forwarded and not yet W'd
  std::size_t weights_left = 0;  ///< Ws still to run
  bool blocked = false;          ///< nothing was ready when it last looked
  double blocked_at = 0;         ///< when that was
};

/// One virtual stage's state.
struct ZeroBubbleStage {
  std::size_t next_forward = 0;
  std::vector<double> forward_in;  ///< by micro-batch: when its input arrives (NaN: not yet known)
  std::vector<double> gradient_in; ///< likewise its output's gradient
  std::vector<char> input_done;    ///< its I has run
};

constexpr double unknown = std::numeric_limits<double>::quiet_NaN();

} // namespace

Schedule zero_bubble_schedule(std::string name, std::size_t stages, const std::vector<std::uint32_t>& sizes,
                              std::size_t limit, const StageTimes& times, Chunking chunking) {
  Schedule schedule = empty_schedule(std::move(name), stages, sizes);
  schedule.chunks = std::max<std::uint32_t>(chunking.chunks, 1);
  schedule.shape = chunking.shape;
  const std::size_t m = sizes.size(), v = schedule.chunks, V = schedule.virtual_stages();
  if (stages == 0 || m == 0) return schedule;
  // The bound counts a chunk's sample as 1/chunks of a stage's.
  const std::uint64_t reference = *std::max_element(sizes.begin(), sizes.end());
  const std::uint64_t bound = std::max<std::size_t>(limit, 1) * reference * v;
  const double share = 1.0 / static_cast<double>(v);
  const auto forward_ms = [&](std::size_t j, std::size_t k) {
    return sizes[k] * (j < times.forward_ms.size() ? times.forward_ms[j] : share);
  };
  const auto backward_ms = [&](std::size_t j, std::size_t k, Op op) {
    const double input_share =
        j < times.input_gradient_share.size() ? times.input_gradient_share[j] : unmeasured_input_gradient_share;
    return sizes[k] * backward_share(op, input_share) *
           (j < times.backward_ms.size() ? times.backward_ms[j] : 2.0 * share);
  };
  const auto send_ms = [&](std::size_t boundary, std::size_t k) {
    if (!schedule.crosses_devices(boundary)) return 0.0;
    return sizes[k] * (boundary < times.send_ms.size() ? times.send_ms[boundary] : 0.0);
  };
  std::vector<ZeroBubbleDevice> device(stages);
  for (ZeroBubbleDevice& d : device)
    d.weights_left = m * v;
  std::vector<ZeroBubbleStage> st(V);
  for (ZeroBubbleStage& stage : st) {
    stage.forward_in.assign(m, unknown);
    stage.gradient_in.assign(m, unknown);
    stage.input_done.assign(m, 0);
  }
  for (std::size_t k = 0; k < m; ++k)
    st[0].forward_in[k] = 0; // the batch is there from the start
  // A blocked device wakes when an input reaches one of its virtual stages: at once,
  // or when it arrives.
  const auto arrive = [&](std::size_t j, double& slot, double when) {
    slot = when;
    ZeroBubbleDevice& d = device[schedule.place_of(j).stage];
    if (d.blocked) d.free_at = std::min(d.free_at, std::max(when, d.blocked_at));
  };
  // The chunk's virtual stages on this device, deepest in the model first: a forward
  // that reaches the loss sooner starts the backwards sooner.
  std::vector<std::vector<std::size_t>> deepest_first(stages);
  for (std::size_t d = 0; d < stages; ++d) {
    for (std::uint32_t c = 0; c < v; ++c)
      deepest_first[d].push_back(schedule.virtual_stage(d, c));
    std::sort(deepest_first[d].rbegin(), deepest_first[d].rend());
  }
  for (;;) {
    // The device that decides next is the one free earliest: every input that arrives
    // by then comes from an action decided before.
    std::size_t s = stages;
    for (std::size_t i = 0; i < stages; ++i)
      if (device[i].weights_left > 0 && !std::isinf(device[i].free_at) &&
          (s == stages || device[i].free_at < device[s].free_at))
        s = i;
    if (s == stages) break;
    ZeroBubbleDevice& dev = device[s];
    const double now = dev.free_at;
    auto& actions = schedule.stages[s];
    // The I whose gradient is here, the earliest micro-batch first.
    std::optional<std::pair<std::size_t, std::size_t>> input; ///< virtual stage, micro-batch
    for (std::size_t k = 0; k < m && !input; ++k)
      for (const std::size_t j : deepest_first[s])
        if (!st[j].input_done[k] && k < st[j].next_forward && !std::isnan(st[j].gradient_in[k]) &&
            st[j].gradient_in[k] <= now) {
          input = {j, k};
          break;
        }
    // A forward fits if it leaves room for one of each deeper chunk's on the device:
    // else shallow forwards could fill the device while the micro-batch that would
    // free it waits to come round to a deeper chunk.
    const auto fits = [&](std::size_t j, std::size_t k) {
      const auto deeper = static_cast<std::uint64_t>(std::find(deepest_first[s].begin(), deepest_first[s].end(), j) -
                                                     deepest_first[s].begin());
      return dev.held == 0 || dev.held + sizes[k] + deeper * reference <= bound;
    };
    std::optional<std::size_t> forward; ///< virtual stage
    for (const std::size_t j : deepest_first[s]) {
      const std::size_t f = st[j].next_forward;
      if (f < m && !std::isnan(st[j].forward_in[f]) && st[j].forward_in[f] <= now && fits(j, f)) {
        forward = j;
        break;
      }
    }
    if (input) {
      const auto [j, k] = *input;
      actions.push_back({Op::input_gradient, k, sizes[k], schedule.place_of(j).chunk});
      dev.free_at = now + backward_ms(j, k, Op::input_gradient);
      st[j].input_done[k] = 1;
      dev.deferred.push_back({k, schedule.place_of(j).chunk});
      if (j > 0) arrive(j - 1, st[j - 1].gradient_in[k], dev.free_at + send_ms(j - 1, k));
    } else if (forward) {
      const std::size_t j = *forward, f = st[j].next_forward;
      actions.push_back({Op::forward, f, sizes[f], schedule.place_of(j).chunk});
      dev.free_at = now + forward_ms(j, f);
      dev.held += sizes[f];
      ++st[j].next_forward;
      if (j + 1 < V)
        arrive(j + 1, st[j + 1].forward_in[f], dev.free_at + send_ms(j, f));
      else
        st[j].gradient_in[f] = dev.free_at; // the loss is where the forward ends
    } else if (!dev.deferred.empty()) {
      const auto [k, chunk] = dev.deferred.front();
      dev.deferred.pop_front();
      actions.push_back({Op::weight_gradient, k, sizes[k], chunk});
      dev.free_at = now + backward_ms(schedule.virtual_stage(s, chunk), k, Op::weight_gradient);
      dev.held -= sizes[k];
      --dev.weights_left;
    } else {
      // Nothing to do until an input arrives: the earliest one known, or one not yet sent.
      double wake = std::numeric_limits<double>::infinity();
      for (const std::size_t j : deepest_first[s]) {
        for (std::size_t k = 0; k < st[j].next_forward; ++k)
          if (!st[j].input_done[k] && !std::isnan(st[j].gradient_in[k])) wake = std::min(wake, st[j].gradient_in[k]);
        const std::size_t f = st[j].next_forward;
        if (f < m && !std::isnan(st[j].forward_in[f]) && fits(j, f)) wake = std::min(wake, st[j].forward_in[f]);
      }
      dev.blocked = true;
      dev.blocked_at = now;
      dev.free_at = std::max(wake, now);
      continue;
    }
    dev.blocked = false;
  }
  return schedule;
}

Schedule zbv_schedule(std::size_t stages, const std::vector<std::uint32_t>& sizes, const StageTimes& times) {
  return zero_bubble_schedule("zbv", stages, sizes, stages, times, {2, ChunkShape::v});
}

} // namespace actorpipe
