#include "sim/engine.hpp"

#include "sim/event_queues.hpp"
#include "sim/instance_slot.hpp"
#include "sim/lane_booking.hpp"
#include "sim/straggled_time.hpp"
#include "sync/server_gate.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <tuple>

namespace actorpipe::sim {

namespace {

constexpr double unknown = std::numeric_limits<double>::quiet_NaN();

template <class Queue> class Simulation {
public:
  Simulation(const Model& model, std::size_t iterations)
      : model_(model), iterations_(iterations),
        chunk_actions_(model.schedule->chunks > 1 ? model.schedule->virtual_stage_actions()
                                                  : std::vector<std::vector<Action>>{}),
        actions_(model.schedule->chunks > 1 ? chunk_actions_ : model.schedule->stages),
        m_(model.schedule->micro_batch_sizes.size()), slots_(model.instances.begin(), model.instances.end()),
        forward_in_(model.instances.size() * m_, unknown), backward_in_(model.instances.size() * m_, unknown),
        lanes_(lane_clocks(model.lane_bytes_per_ms)), rounds_(model.groups.size(), 0.0),
        processor_free_(model.processors, 0.0), group_ready_(model.groups.size(), 0),
        group_ready_at_(model.groups.size(), 0.0), pipelines_(model.stages ? model.instances.size() / model.stages : 0),
        claimed_(pipelines_, 0), parts_of_(pipelines_, 0),
        steps_(model.stepping.asynchronous ? model.instances.size() : 0), away_(model.instances.size(), false),
        repeats_(!model.stepping.asynchronous && model.stragglers.empty() && !model.trace && iterations >= 4),
        placed_steps_(model.schedule->places_steps()) {
    if (!model.stragglers.empty()) random_.emplace(model.stragglers.seed);
    if (model.stepping.asynchronous && model.stepping.staleness != SyncStepping::unbounded && pipelines_ > 0)
      for (std::size_t s = 0; s < model.stages; ++s)
        gates_.emplace_back(pipelines_, model.stepping.staleness);
    out_.iteration_end_ms.assign(iterations, 0.0);
    out_.busy_ms.assign(model.instances.size(), 0.0);
    out_.sync_ms.assign(model.instances.size(), 0.0);
    out_.lane_busy_ms.assign(lanes_.size(), 0.0);
    out_.lane_bytes.assign(lanes_.size(), 0.0);
    // A device with chunks runs its virtual stages' actions in its list's order: the
    // turn passes along the list, and back to its start for the next iteration.
    const Schedule& schedule = *model.schedule;
    if (schedule.chunks > 1) {
      for (const auto& list : schedule.stages) {
        auto& turns = turns_.emplace_back();
        for (const Action& a : list)
          turns.push_back(schedule.virtual_stage(&list - schedule.stages.data(), a.chunk));
      }
      turn_.assign(pipelines_ * schedule.stages.size(), 0);
    }
  }

  Outcome run() {
    if (iterations_ == 0 || m_ == 0) return std::move(out_);
    if (asynchronous()) pool_ = iterations_ * pipelines_;
    for (std::uint32_t i = 0; i < model_.instances.size(); ++i)
      if (!asynchronous() || model_.instances[i].stage > 0 || claim(model_.instances[i].pipeline, 0.0)) try_start(i);
    while (!queue_.empty()) {
      const Event event = queue_.pop();
      prefetch_ahead();
      ++out_.events;
      if (event.kind == action_done)
        finish_action(event.instance, event.time);
      else
        start_iteration(event.instance, event.time);
      if (repeats_ && entered_ == slots_.size()) fast_forward(event.time);
    }
    for (std::size_t i = 0; i < slots_.size(); ++i)
      out_.busy_ms[i] = slots_[i].busy_ms;
    account_lanes();
    return std::move(out_);
  }

private:
  /// Events of one time run through thousands of instances spread over memory larger
  /// than the caches: what an event a few pops ahead will touch (its slot and arrivals,
  /// the route it sends on and the instance that send starts; nearer, that route's
  /// lanes and both processors' clocks) is fetched now, so that its misses overlap with
  /// this event's work. Always inlined: GCC drops a call to a function of prefetches
  /// alone, which has no side effects.
  [[gnu::always_inline]] void prefetch_ahead() {
    constexpr std::size_t far = 16, near = 8;
    if (const Event* e = queue_.ahead(far)) {
      const std::uint32_t j = e->instance;
      prefetch_lines(&slots_[j], sizeof(Slot));
      prefetch_lines(&forward_in_[j * m_], m_ * sizeof(double));
      prefetch_lines(&backward_in_[j * m_], m_ * sizeof(double));
      if (e->towards != Towards::nowhere) {
        // The send, and the instance it starts.
        const bool next = e->towards == Towards::next;
        const std::uint32_t k = next ? j + 1 : j - 1;
        prefetch_lines(next ? &model_.instances[j].to_next : &model_.instances[j].to_previous, sizeof(Route));
        prefetch_lines(&slots_[k], sizeof(Slot));
        prefetch_lines(next ? &forward_in_[k * m_] : &backward_in_[k * m_], m_ * sizeof(double));
      }
    }
    if (const Event* e = queue_.ahead(near)) {
      const std::uint32_t j = e->instance;
      __builtin_prefetch(&processor_free_[slots_[j].processor]);
      if (e->towards != Towards::nowhere) {
        const bool next = e->towards == Towards::next;
        __builtin_prefetch(&processor_free_[slots_[next ? j + 1 : j - 1].processor]);
        const Route& route = next ? model_.instances[j].to_next : model_.instances[j].to_previous;
        for (std::uint8_t l = 0; l < route.count; ++l)
          __builtin_prefetch(&lanes_[route.lanes[l]]);
      }
    }
  }

  /// Prefetches the cache lines of the `bytes` from `at` on.
  [[gnu::always_inline]] static void prefetch_lines(const void* at, std::size_t bytes) {
    constexpr std::uintptr_t line = 64;
    const auto from = reinterpret_cast<std::uintptr_t>(at);
    for (std::uintptr_t a = from & ~(line - 1); a < from + bytes; a += line)
      __builtin_prefetch(reinterpret_cast<const void*>(a));
  }

  double& forward_in(std::uint32_t i, std::size_t k) { return forward_in_[i * m_ + k]; }
  double& backward_in(std::uint32_t i, std::size_t k) { return backward_in_[i * m_ + k]; }

  double duration(const Slot& instance, const Action& action, double start) {
    const bool forward = action.op == Op::forward;
    const double ms = model_.action_overhead_ms +
                      (forward ? instance.forward_fixed_ms + action.size * instance.forward_ms_per_sample
                               : backward_share(action.op, instance.input_gradient_share) *
                                     (instance.backward_fixed_ms + action.size * instance.backward_ms_per_sample));
    return model_.stragglers.empty() ? ms : straggled_ms(model_.stragglers, instance.device, start, ms, *random_);
  }

  /// Instance i's device (pipeline and device of the schedule) and where that device's
  /// turn is: with chunks, an instance acts only when the device's list reaches it.
  std::size_t device_of(std::uint32_t i) const {
    return i / model_.stages * model_.schedule->stages.size() + model_.schedule->place_of(slots_[i].stage).stage;
  }
  bool has_turn(std::uint32_t i) const {
    if (turns_.empty()) return true;
    const std::size_t device = device_of(i);
    const auto& turns = turns_[device % turns_.size()];
    return turns[turn_[device]] == slots_[i].stage;
  }
  /// The device's turn passes on: to whom it passes may start.
  void pass_turn(std::uint32_t i) {
    if (turns_.empty()) return;
    const std::size_t device = device_of(i);
    const auto& turns = turns_[device % turns_.size()];
    if (++turn_[device] == turns.size()) turn_[device] = 0;
    try_start(static_cast<std::uint32_t>(i / model_.stages * model_.stages + turns[turn_[device]]));
  }

  /// Starts instance i's next action if its input is there and, with chunks, its
  /// device's turn is its.
  void try_start(std::uint32_t i) {
    Slot& st = slots_[i];
    if (st.busy || st.waiting_step) return;
    if (!has_turn(i)) return;
    const Action& action = actions_[st.stage][st.next];
    if (!per_micro_batch(action.op)) {
      start_sync_or_step(i, action);
      return;
    }
    // A W waits for its own stage only, and so does the first stage's forward: its data
    // is there from the iteration's start, no later than the stage went idle.
    double input = st.idle_since;
    if (action.op == Op::forward && st.stage > 0)
      input = forward_in(i, action.micro_batch);
    else if (sends_gradient(action.op))
      input = backward_in(i, action.micro_batch);
    if (std::isnan(input)) return;
    if (action.op == Op::forward)
      forward_in(i, action.micro_batch) = unknown;
    else if (sends_gradient(action.op))
      backward_in(i, action.micro_batch) = unknown;
    st.busy = true;
    // A processor shared with other instances takes actions in the order they ask.
    double& processor_free = processor_free_[st.processor];
    st.action_start = std::max({input, st.idle_since, processor_free});
    st.action_ms = duration(st, action, st.action_start);
    processor_free = st.action_start + st.action_ms;
    Towards towards = Towards::nowhere;
    if (action.op == Op::forward && st.stage + 1 < model_.stages)
      towards = Towards::next;
    else if (sends_gradient(action.op) && st.stage > 0)
      towards = Towards::previous;
    queue_.push({st.action_start + st.action_ms, i, action_done, towards});
  }

  /// A placed sync takes no time on the device (its round runs on the links); a placed
  /// step waits for the round and then takes the optimizer's time on the processor.
  /// Stepping asynchronously, a pipeline's stage steps when its server gate says, as
  /// where the schedule places nothing: its sync and step only mark the end.
  void start_sync_or_step(std::uint32_t i, const Action& action) {
    Slot& st = slots_[i];
    double& processor_free = processor_free_[st.processor];
    // Where the device is in its list: past its previous action, whoever's it was.
    double start = std::max(st.idle_since, processor_free), ms = 0;
    if (action.op == Op::step && !asynchronous()) {
      if (std::isnan(st.synced_at)) return; // its round has not ended
      start = std::max(start, st.synced_at);
      ms = model_.instances[i].optimizer_ms;
      processor_free = start + ms;
      st.synced_at = unknown;
    }
    st.busy = true;
    st.action_start = start;
    st.action_ms = ms;
    queue_.push({start + ms, i, action_done});
  }

  /// Books a transfer on its route's lanes (book_transfer) and returns its arrival.
  /// What each lane carried is worked out at the end (account_lanes).
  double transfer(const Route& route, double bytes, double ready, std::uint32_t from, const std::string* label) {
    const Booking b = book_transfer(route, bytes, ready, lanes_);
    const double ms = b.arrival_ms - b.start_ms;
    if (label && ms > 0) {
      const Instance& instance = model_.instances[from];
      out_.spans.push_back({"send " + *label, instance.pipeline, instance.stage, Span::Kind::send, b.start_ms, ms,
                            slots_[from].iteration});
    }
    return b.arrival_ms;
  }

  /// Each lane's bytes and busy time, from what each route and ring carried: a lane's
  /// busy time is linear in its bytes, and every iteration an instance runs sends the
  /// same, so nothing of it is counted while the events run.
  void account_lanes() {
    const auto account = [this](LaneId lane, double bytes) {
      out_.lane_bytes[lane] += bytes;
      out_.lane_busy_ms[lane] += bytes / model_.lane_bytes_per_ms[lane];
    };
    // Per virtual stage and iteration, the samples its forwards send on and its
    // backwards send back.
    std::vector<double> forward_samples(actions_.size(), 0.0), gradient_samples(actions_.size(), 0.0);
    for (std::size_t v = 0; v < actions_.size(); ++v)
      for (const Action& a : actions_[v]) {
        if (a.op == Op::forward && v + 1 < model_.stages) forward_samples[v] += a.size;
        if (sends_gradient(a.op) && v > 0) gradient_samples[v] += a.size;
      }
    for (std::uint32_t i = 0; i < model_.instances.size(); ++i) {
      const Instance& instance = model_.instances[i];
      const double iterations = slots_[i].iteration;
      const double sent_next = iterations * forward_samples[instance.stage] * instance.send_bytes_per_sample;
      const double sent_previous = iterations * gradient_samples[instance.stage] * instance.grad_bytes_per_sample;
      for (const auto& [route, bytes] :
           {std::pair{&instance.to_next, sent_next}, std::pair{&instance.to_previous, sent_previous}})
        if (bytes > 0)
          for (std::uint8_t l = 0; l < route->count; ++l)
            account(route->lanes[l], bytes * route->share[l]);
    }
    for (std::size_t g = 0; g < model_.groups.size(); ++g) {
      const Group& group = model_.groups[g];
      const double n = static_cast<double>(group.ring);
      if (rounds_[g] > 0)
        for (std::size_t l = 0; l < group.lanes.size(); ++l)
          account(group.lanes[l], rounds_[g] * group.lane_uses[l] * 2.0 * (n - 1) / n * group.bytes);
    }
  }

  void finish_action(std::uint32_t i, double now) {
    Slot& st = slots_[i];
    const Action& action = actions_[st.stage][st.next];
    if (!per_micro_batch(action.op)) {
      finish_sync_or_step(i, action, now);
      return;
    }
    st.busy_ms += st.action_ms;
    std::string label;
    if (model_.trace) {
      label = to_string(action);
      out_.spans.push_back(
          {label, i / model_.stages, st.stage, Span::Kind::compute, st.action_start, st.action_ms, st.iteration});
    }
    const std::string* trace_label = model_.trace ? &label : nullptr;
    const std::size_t k = action.micro_batch;
    if (action.op == Op::forward) {
      if (st.stage + 1 < model_.stages) {
        forward_in(i + 1, k) =
            transfer(model_.instances[i].to_next, action.size * st.send_bytes_per_sample, now, i, trace_label);
        try_start(i + 1);
      } else {
        backward_in(i, k) = now; // the loss is computed where the forward ends
      }
    } else {
      st.last_backward = now;
      if (sends_gradient(action.op) && st.stage > 0) {
        backward_in(i - 1, k) =
            transfer(model_.instances[i].to_previous, action.size * st.grad_bytes_per_sample, now, i, trace_label);
        try_start(i - 1);
      }
    }
    end_action(i, now);
  }

  /// Instance i's action has ended at `now`: the device's turn passes on, and i goes on
  /// with its next action or, after its last, to its stage's sync and step.
  void end_action(std::uint32_t i, double now) {
    Slot& st = slots_[i];
    st.busy = false;
    st.idle_since = now;
    const bool more = ++st.next < actions_[st.stage].size();
    st.waiting_step = !more; // before the turn passes, which may come back to it
    pass_turn(i);
    if (more) {
      try_start(i);
      return;
    }
    if (asynchronous())
      pushed(i, now);
    else if (placed_steps_)
      queue_.push({now, i, iteration_start}); // its step was its last action
    else
      gradients_ready(st.stage, now);
  }

  /// A placed sync joins its stage's round; a placed step has ended it in lockstep.
  void finish_sync_or_step(std::uint32_t i, const Action& action, double now) {
    Slot& st = slots_[i];
    const Instance& instance = model_.instances[i];
    if (!asynchronous()) {
      if (action.op == Op::sync) {
        if (const auto end = round_end(instance.stage, now))
          for (std::uint32_t r : model_.groups[instance.stage].instances) {
            slots_[r].synced_at = *end;
            if (r != i) try_start(r); // it may wait at its step
          }
      } else {
        if (model_.trace && st.action_ms > 0)
          out_.spans.push_back({"step", instance.pipeline, instance.stage, Span::Kind::sync, st.action_start,
                                st.action_ms, st.iteration});
        out_.sync_ms[i] += now - st.last_backward;
        double& iteration_end = out_.iteration_end_ms[st.iteration];
        iteration_end = std::max(iteration_end, now);
      }
    }
    end_action(i, now);
  }

  bool asynchronous() const { return model_.stepping.asynchronous; }

  /// Pipeline p's first stage takes the next part of the data, if any is left.
  bool claim(std::size_t p, double now) {
    if (pool_ == 0) return false;
    ++claimed_[p];
    if (--pool_ == 0 && !gates_.empty())
      for (std::uint32_t i = 0; i < slots_.size(); ++i)
        leave_if_done(i, now); // pipelines out of work no longer hold the others back
    return true;
  }

  /// Asynchronous: instance i's actions of a step are done; it steps once its stage's
  /// server gate (the parameter-server actor's rule) answers it.
  void pushed(std::uint32_t i, double now) {
    ++steps_[i].pushed;
    if (gates_.empty()) {
      queue_.push({take_step(i, now), i, iteration_start});
      return;
    }
    const Instance& instance = model_.instances[i];
    answer(instance.stage, gates_[instance.stage].push(instance.pipeline), now);
  }

  /// The replicas of `stage` a gate's decision answers step now.
  void answer(std::size_t stage, const sync::ServerDecision& decision, double now) {
    for (const std::size_t p : decision.answer) {
      const auto i = static_cast<std::uint32_t>(p * model_.stages + stage);
      queue_.push({take_step(i, now), i, iteration_start});
      leave_if_done(i, now);
    }
  }

  /// A replica answered for every part its pipeline took, with none left to take, has
  /// no work: as the job tells a parameter server, it is away.
  void leave_if_done(std::uint32_t i, double now) {
    const Instance& instance = model_.instances[i];
    sync::ServerGate& gate = gates_[instance.stage];
    if (away_[i] || pool_ > 0 || claimed_[instance.pipeline] != steps_[i].pushed || gate.waiting(instance.pipeline))
      return;
    away_[i] = true;
    answer(instance.stage, gate.set_away(instance.pipeline, true), now);
  }

  /// Instance i's optimizer step, once its gradients are ready at `ready`: on its
  /// processor, after whatever that has reserved. Returns when the step ends.
  double take_step(std::uint32_t i, double ready) {
    const Instance& instance = model_.instances[i];
    double& processor_free = processor_free_[instance.processor];
    const double step_start = std::max(ready, processor_free);
    const double step_end = step_start + instance.optimizer_ms;
    processor_free = step_end;
    if (model_.trace && instance.optimizer_ms > 0)
      out_.spans.push_back({"step", instance.pipeline, instance.stage, Span::Kind::sync, step_start,
                            instance.optimizer_ms, slots_[i].iteration});
    out_.sync_ms[i] += step_end - slots_[i].last_backward;
    return step_end;
  }

  /// The last replica of a stage to finish its backwards starts the all-reduce; each
  /// replica then steps.
  void gradients_ready(std::size_t stage, double now) {
    const auto end = round_end(stage, now);
    if (!end) return;
    for (std::uint32_t i : model_.groups[stage].instances) {
      const double step_end = take_step(i, *end);
      double& iteration_end = out_.iteration_end_ms[slots_[i].iteration];
      iteration_end = std::max(iteration_end, step_end);
      queue_.push({step_end, i, iteration_start});
    }
  }

  /// A replica of `stage` joins its round at `now`: when it is the last, the all-reduce
  /// over their ring is booked and its end returned; nothing before.
  std::optional<double> round_end(std::size_t stage, double now) {
    const Group& group = model_.groups[stage];
    group_ready_at_[stage] = std::max(group_ready_at_[stage], now);
    if (++group_ready_[stage] < group.instances.size()) return std::nullopt;
    group_ready_[stage] = 0;
    double end = group_ready_at_[stage];
    if (group.ring > 1 && group.bytes > 0) {
      const Booking b = book_ring(group, end, lanes_);
      ++rounds_[stage];
      end = b.arrival_ms;
      if (model_.trace)
        for (std::uint32_t i : group.instances)
          out_.spans.push_back({"allreduce", model_.instances[i].pipeline, stage, Span::Kind::sync, b.start_ms,
                                end - b.start_ms, slots_[i].iteration});
    }
    group_ready_at_[stage] = 0;
    return end;
  }

  /// Asynchronous: instance i has stepped; its pipeline's part is done once every
  /// stage has, and every `pipelines` parts done end an iteration.
  void step_taken(std::uint32_t i, double now) {
    ++steps_[i].completed;
    const std::size_t p = model_.instances[i].pipeline;
    std::uint64_t done = steps_[i].completed;
    for (std::size_t s = 0; s < model_.stages; ++s)
      done = std::min(done, steps_[p * model_.stages + s].completed);
    if (done <= parts_of_[p]) return;
    parts_of_[p] = done;
    if (++parts_done_ % pipelines_ == 0 && parts_done_ / pipelines_ <= iterations_)
      out_.iteration_end_ms[parts_done_ / pipelines_ - 1] = now;
  }

  void start_iteration(std::uint32_t i, double now) {
    Slot& st = slots_[i];
    if (asynchronous()) {
      step_taken(i, now);
      ++st.iteration;
      if (model_.instances[i].stage == 0 && !claim(model_.instances[i].pipeline, now)) return;
    } else if (++st.iteration >= iterations_) {
      return;
    } else if (repeats_) {
      // Each iteration's first entry starts a count that its last completes: an entry
      // into a later one before that would leave nothing to compare.
      if (entered_ == 0) entering_ = st.iteration;
      if (st.iteration == entering_)
        ++entered_;
      else
        repeats_ = false;
    }
    st.next = 0;
    st.waiting_step = false;
    st.idle_since = now;
    try_start(i);
  }

  /// Where the run stands at the moment every instance has entered an iteration, its
  /// times counted from that moment; and what the run had added up by then.
  struct Settled {
    double at = 0;
    std::size_t iteration = 0;
    std::vector<double> times;        ///< every clock the future reads, from `at`
    std::vector<std::uint64_t> marks; ///< every count and flag the future reads
    std::vector<double> busy, sync, rounds;
    std::size_t events = 0;
  };

  /// Appends `t` as seen from `at`: NaN stays NaN.
  static void relative(std::vector<double>& to, double t, double at) { to.push_back(std::isnan(t) ? t : t - at); }

  Settled settle(double at) const {
    Settled now;
    now.at = at;
    now.iteration = slots_.front().iteration;
    now.events = out_.events;
    for (const Slot& st : slots_) {
      for (const double t : {st.idle_since, st.action_start, st.last_backward, st.synced_at})
        relative(now.times, t, at);
      now.times.push_back(st.action_ms);
      now.marks.push_back(st.next);
      now.marks.push_back(st.iteration - now.iteration);
      now.marks.push_back(st.busy + 2 * st.waiting_step);
      now.busy.push_back(st.busy_ms);
    }
    for (const auto* arrivals : {&forward_in_, &backward_in_})
      for (const double t : *arrivals)
        relative(now.times, t, at);
    // Every booking from here on is ready no earlier than now: a lane free before is
    // simply free.
    for (const LaneClock& lane : lanes_)
      now.times.push_back(std::max(lane.free_at_ms - at, 0.0));
    for (const double t : processor_free_)
      relative(now.times, t, at);
    for (std::size_t g = 0; g < group_ready_.size(); ++g) {
      now.marks.push_back(group_ready_[g]);
      now.times.push_back(group_ready_[g] > 0 ? group_ready_at_[g] - at : 0.0);
    }
    for (const std::size_t t : turn_)
      now.marks.push_back(t);
    std::vector<std::tuple<double, std::uint32_t, Kind, Towards>> pending;
    queue_.for_each([&](const Event& e) { pending.emplace_back(e.time - at, e.instance, e.kind, e.towards); });
    std::sort(pending.begin(), pending.end());
    for (const auto& [t, instance, kind, towards] : pending) {
      now.times.push_back(t);
      now.marks.push_back(instance);
      now.marks.push_back(static_cast<std::uint64_t>(kind) << 8 | static_cast<std::uint64_t>(towards));
    }
    now.sync = out_.sync_ms;
    now.rounds = rounds_;
    return now;
  }

  /// Whether two moments stand alike: the same counts and flags, and every clock as far
  /// from its moment, to rounding.
  static bool alike(const Settled& a, const Settled& b) {
    if (a.marks != b.marks || a.times.size() != b.times.size()) return false;
    const double tolerance = 1e-9 * std::max({1.0, std::abs(a.at), std::abs(b.at)});
    for (std::size_t k = 0; k < a.times.size(); ++k) {
      const double x = a.times[k], y = b.times[k];
      if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && std::abs(x - y) > tolerance)) return false;
    }
    return true;
  }

  /// Every instance has just entered an iteration, at `now`. Where the run stands as it
  /// stood when they entered the one before, only later, nothing differs from here on but
  /// the time, and each iteration repeats the last: the run moves on by whole
  /// iterations at once, every clock and iteration with it and every sum by as many
  /// iterations' worth, and simulates the last two as they come.
  void fast_forward(double now) {
    entered_ = 0;
    Settled here = settle(now);
    if (!settled_ || !alike(*settled_, here)) {
      settled_ = std::move(here);
      return;
    }
    const Settled& before = *settled_;
    const double period = now - before.at;
    const std::size_t k = here.iteration;
    if (k + 2 >= iterations_) {
      repeats_ = false; // too few iterations left to move on by
      return;
    }
    const std::size_t skip = iterations_ - 2 - k;
    const double by = static_cast<double>(skip) * period;
    const double times = static_cast<double>(skip);
    for (std::size_t j = 0; j < skip; ++j)
      out_.iteration_end_ms[k + j] = now + static_cast<double>(j + 1) * period;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& st = slots_[i];
      for (double* t : {&st.idle_since, &st.action_start, &st.last_backward, &st.synced_at})
        if (!std::isnan(*t)) *t += by;
      st.iteration += static_cast<std::uint32_t>(skip);
      st.busy_ms += times * (here.busy[i] - before.busy[i]);
      out_.sync_ms[i] += times * (here.sync[i] - before.sync[i]);
    }
    for (auto* arrivals : {&forward_in_, &backward_in_})
      for (double& t : *arrivals)
        if (!std::isnan(t)) t += by;
    for (LaneClock& lane : lanes_)
      lane.free_at_ms += by;
    for (double& t : processor_free_)
      t += by;
    for (std::size_t g = 0; g < group_ready_.size(); ++g) {
      if (group_ready_[g] > 0) group_ready_at_[g] += by;
      rounds_[g] += times * (here.rounds[g] - before.rounds[g]);
    }
    queue_.shift(by);
    out_.events += skip * (here.events - before.events);
    out_.repeated_iterations = skip;
    repeats_ = false;
    settled_.reset();
  }

  const Model& model_;
  std::size_t iterations_;
  /// Per virtual stage, its actions: without chunks, the schedule's own lists (a
  /// search simulates thousands of splits of one schedule: copying them took about a
  /// quarter of a search of 32 stages of a 1,000-block chain at 8 micro-batches, 8.3
  /// ms against 6.4); with chunks, each device's list taken apart.
  std::vector<std::vector<Action>> chunk_actions_;
  const std::vector<std::vector<Action>>& actions_;
  /// With chunks: per device of the schedule, the virtual stage of each action in its
  /// list; per pipeline's device, the index of the action whose turn it is.
  std::vector<std::vector<std::size_t>> turns_;
  std::vector<std::size_t> turn_;
  std::size_t m_;
  std::vector<Slot> slots_;
  std::vector<double> forward_in_, backward_in_; ///< arrival times; NaN until sent
  std::vector<LaneClock> lanes_;
  std::vector<double> rounds_;         ///< per group, all-reduces booked
  std::vector<double> processor_free_; ///< when each processor's last reserved work ends
  std::vector<std::size_t> group_ready_;
  std::vector<double> group_ready_at_;
  // Asynchronous stepping:
  std::size_t pipelines_;
  std::size_t pool_ = 0;                ///< parts no pipeline has taken yet
  std::vector<std::uint64_t> claimed_;  ///< per pipeline, parts taken
  std::vector<std::uint64_t> parts_of_; ///< per pipeline, parts every stage has stepped on
  struct Steps {
    std::uint64_t pushed = 0;    ///< steps whose actions are done
    std::uint64_t completed = 0; ///< steps taken
  };
  std::vector<Steps> steps_;            ///< per instance
  std::size_t parts_done_ = 0;          ///< over all pipelines
  std::vector<sync::ServerGate> gates_; ///< per stage, under a staleness bound
  std::vector<bool> away_;              ///< per instance: told its gate it has no work
  Queue queue_;
  /// Lockstep without stragglers or a trace: whether the run may yet move on by whole
  /// iterations once each repeats the one before (fast_forward()).
  bool repeats_;
  std::size_t entered_ = 0; ///< instances that have entered iteration `entering_`
  std::uint32_t entering_ = 0;
  std::optional<Settled> settled_;
  /// Only where stragglers draw delays: seeding one took a fortieth of the simulations
  /// a search runs by the thousand (8 micro-batches of 32 stages).
  std::optional<std::mt19937_64> random_;
  bool placed_steps_; ///< the schedule places each stage's sync and step
  Outcome out_;
};

} // namespace

double ring_allreduce_ms(const Group& group) { return ring_allreduce_ms(group, group.bytes); }

double ring_allreduce_ms(const Group& group, double bytes) {
  const double n = static_cast<double>(group.ring);
  if (n < 2) return 0;
  const double transfer = std::isinf(group.bytes_per_ms) ? 0.0 : 2.0 * (n - 1) / n * bytes / group.bytes_per_ms;
  return transfer + 2.0 * (n - 1) * group.latency_ms;
}

Outcome run(const Model& model, std::size_t iterations) {
  // Buckets pay a hash lookup per event, which only many alike pipelines repay.
  if (model.instances.size() >= 256) return Simulation<EventBuckets>(model, iterations).run();
  return Simulation<EventHeap>(model, iterations).run();
}

} // namespace actorpipe::sim
