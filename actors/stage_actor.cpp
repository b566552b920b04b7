/// Stage actor: executes its schedule as inputs arrive, sends activations forward and
/// gradients back, has its gradients reduced with its replicas', steps its optimizer
/// and reports.

#include "stage_actor.hpp"

#include "device_turns.hpp"
#include "replica_barrier.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"
#include "train/payload.hpp"
#include "train/stage_computation.hpp"

#include <caf/all.hpp>

#include <csignal>
#include <cstdlib>
#include <future>

#include <map>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

namespace actorpipe::actors {

namespace {

/// A micro-batch of a step: the next step's inputs and labels may arrive while this
/// step still runs.
using Key = std::pair<std::uint64_t, std::size_t>;

struct StageState {
  StageConfig config;
  StageLinks links;
  std::size_t cursor = 0; ///< the next action of this step
  std::uint64_t step = 1;
  std::map<Key, Incoming> inputs, gradients;
  std::map<Key, std::pair<Incoming, double>> labels;
  bool syncing = false;
  bool failed = false;
  /// A schedule that places steps: this replica joined its round at its sync and waits
  /// for its release (in_round), or was released, and whether the round stepped it.
  bool in_round = false;
  std::optional<bool> round_stepped;
  /// Scheduled averaging: the step whose ask awaits its answer while the stage computes
  /// the next, whether the answer is here, and who waits for the stage to settle (take
  /// the change).
  std::optional<std::uint64_t> asked;
  bool answered = false;
  std::vector<caf::typed_response_promise<bool>> settling;
  /// Clipping: this step's part of the gradient's norm went to the pipeline, whose answer
  /// (the norm of the whole model's gradient) the step waits for.
  bool norming = false;
  std::optional<double> gradient_norm;
  std::optional<Clock::time_point> waiting_since, sync_since;
  std::optional<device::EmulatedDevice> emulated; ///< on an emulated device: its clock
  static inline const char* name = "stage";

  bool first() const { return config.stage == 0; }
  bool last() const { return config.stage + 1 == config.stages; }
};

using StageActor = stage_actor::stateful_pointer<StageState>;

double now_us(const StageState& st) { return microseconds_since(st.config.origin, Clock::now()); }

void record(StageState& st, SpanKind kind, std::size_t micro, Clock::time_point start, double cpu_start_us = -1) {
  if (!st.config.trace) return;
  const double begin = microseconds_since(st.config.origin, start);
  st.config.trace->add(
      {kind, st.step, micro, begin, now_us(st) - begin, cpu_start_us < 0 ? -1 : thread_cpu_us() - cpu_start_us});
}

/// After a send: its span and, on a core shared with the neighbours, the core for the
/// receiver (StageConfig::core).
void sent(StageState& st, std::size_t micro, Clock::time_point sending) {
  record(st, SpanKind::send, micro, sending);
  if (st.config.core) std::this_thread::yield();
}

/// Reports the first failure to the job; the stage does nothing more after it.
void fail(StageActor self, const std::string& during, const std::string& what) {
  auto& st = self->state;
  st.failed = true;
  self->send(st.links.job, failed_atom::value,
             "stage " + std::to_string(st.config.stage) + " of pipeline " + std::to_string(st.config.pipeline) + ", " +
                 during + " in step " + std::to_string(st.step) + ": " + what);
}

/// Keeps the tensor in `parcel` (taken in from its process where it comes from another)
/// as `what` of micro-batch `micro` of `step`; false when it could not be taken in
/// (reported).
bool take(StageActor self, Parcel& parcel, const char* what, std::uint64_t step, std::uint64_t micro,
          std::map<Key, Incoming>& into) {
  try {
    into[{step, micro}] = open(parcel, self->state.config.transport, self->state.config.make_rows);
  } catch (const std::exception& e) {
    fail(self, std::string("taking in ") + what + " of micro-batch " + std::to_string(micro), text::message_of(e));
    return false;
  }
  return true;
}

/// Σ loss × samples over this step's micro-batches: the last stage's, read once a step
/// (from a GPU, the one wait for it); 0 elsewhere.
double step_loss(StageState& st) { return st.last() ? st.config.computation->take_loss_sum() : 0.0; }

void pass_turn(StageActor self);

/// Clipping, once the step's gradients are final: sends this stage's part of their norm
/// to the pipeline and waits for the whole. A step the schedule places passes the
/// device's turn meanwhile, since the device's other chunks send parts too. False
/// when it failed (reported).
bool ask_norm(StageActor self) {
  auto& st = self->state;
  double square_sum = 0;
  {
    const BusyScope busy(st.config.activity, st.step);
    try {
      square_sum = st.config.computation->gradient_square_sum();
    } catch (const std::exception& e) {
      fail(self, "gradient norm", text::message_of(e));
      return false;
    }
  }
  self->send(st.links.pipeline, norm_atom::value, st.step, square_sum);
  st.norming = true;
  st.syncing = true;
  st.sync_since = Clock::now();
  const auto& actions = st.config.actions;
  if (st.cursor < actions.size() && actions[st.cursor].op == Op::step) pass_turn(self);
  return true;
}

/// The optimizer step once gradients are final (under clipping, once the pipeline has
/// said their norm), then the report to the pipeline. False when it waits for the norm,
/// or the optimizer failed (reported).
bool finish_step(StageActor self, bool stepped) {
  auto& st = self->state;
  if (!stepped) {
    if (st.config.clipping && !st.gradient_norm) {
      ask_norm(self);
      return false;
    }
    const BusyScope busy(st.config.activity, st.step);
    const auto started = Clock::now();
    try {
      st.config.computation->step(st.step, st.gradient_norm.value_or(0.0));
    } catch (const std::exception& e) {
      fail(self, "optimizer step", text::message_of(e));
      return false;
    }
    record(st, SpanKind::step, 0, started);
  }
  st.gradient_norm.reset();
  self->send(st.links.pipeline, done_atom::value, st.step, static_cast<std::uint64_t>(st.config.stage), step_loss(st));
  st.cursor = 0;
  st.syncing = false;
  ++st.step;
  return true;
}

/// Whether the inputs of action `a` are here (a W, a sync and a step need none from
/// elsewhere).
bool ready(const StageState& st, const Action& a) {
  if (!per_micro_batch(a.op)) return true;
  const Key key{st.step, a.micro_batch};
  if (a.op == Op::forward) return st.inputs.count(key) && (!st.last() || st.labels.count(key));
  if (a.op == Op::weight_gradient) return true;
  return st.last() || st.gradients.count(key);
}

/// What action `a` computes on: its input and labels, or the gradient from the next stage.
struct TakenIn {
  train::Payload input, labels, gradient;
  double scale = 1; ///< the labels' micro-batch's share of the batch
};

/// Whether every byte of `a`'s tensors from other processes has landed.
bool landed(const StageState& st, const Action& a) {
  const Key key{st.step, a.micro_batch};
  if (a.op == Op::forward) return st.inputs.at(key).landed() && (!st.last() || st.labels.at(key).first.landed());
  if (a.op == Op::weight_gradient) return true;
  return st.last() || st.gradients.at(key).landed();
}

/// `a`'s tensors, out of the stage's keeping; waits for bytes still on their way in.
TakenIn take_in(StageState& st, const Action& a) {
  const Key key{st.step, a.micro_batch};
  TakenIn taken;
  if (a.op == Op::forward) {
    taken.input = st.inputs.at(key).take();
    st.inputs.erase(key);
    if (st.last()) {
      auto& [labels, scale] = st.labels.at(key);
      taken.labels = labels.take();
      taken.scale = scale;
      st.labels.erase(key);
    }
  } else if (sends_gradient(a.op) && !st.last()) {
    taken.gradient = st.gradients.at(key).take();
    st.gradients.erase(key);
  }
  return taken;
}

/// On an emulated device, waits until the action has taken its modelled time (dilated),
/// stragglers included, since `started`; an action slower than that is left as it is.
void pad(StageState& st, const Action& a, Clock::time_point started) {
  if (st.emulated) std::this_thread::sleep_until(st.emulated->action_end(a, started));
}

/// Sends an activation or a gradient of this step to a neighbour on `device`: at once,
/// or, between emulated devices, when the emulated link delivers it (the sender goes on
/// computing meanwhile, as a device's copy engine would let it).
template <class Atom>
void transfer(StageActor self, const stage_actor& neighbour, const Route& route, const std::optional<DeviceId>& device,
              Atom atom, std::uint64_t micro, train::Payload payload) {
  auto& st = self->state;
  if (st.emulated)
    if (const auto delay = st.emulated->delivery_delay(device, train::payload_bytes(payload), Clock::now())) {
      self->delayed_send(neighbour, std::chrono::ceil<caf::timespan>(*delay), atom, st.step, micro,
                         pack(std::move(payload), route));
      return;
    }
  self->send(neighbour, atom, st.step, micro, pack(std::move(payload), route));
}

/// After a forward: the most activations the stage has held at once, for the run's
/// summary.
void note_stash(StageState& st) {
  if (st.config.trace) st.config.trace->held(st.config.computation->stashed());
}

void run_action(StageActor self, const Action& a, TakenIn taken) {
  auto& st = self->state;
  // Its own work only: a wait for bytes or for a collective's peers ends with the
  // transport's timeout, and a peer stuck at work is that peer's to report.
  const BusyScope busy(st.config.activity, st.step);
  train::StageComputation& computation = *st.config.computation;
  if (st.config.inject_failure && st.config.inject_failure->stage == st.config.stage &&
      st.config.inject_failure->step == st.step && st.cursor == 0) {
    using Effect = InjectedFailure::Effect;
    switch (st.config.inject_failure->effect) {
    case Effect::exit_process: std::_Exit(3);           // as a killed process: nothing flushed, nothing said
    case Effect::hang_process: ::raise(SIGSTOP); break; // every thread stops; its sockets stay open
    case Effect::stall_thread: std::promise<void>().get_future().wait(); break; // never fulfilled
    case Effect::throw_error: throw std::runtime_error("injected failure");
    case Effect::stall_sync: break; // in its sync round: arrive()
    }
  }
  const auto started = Clock::now();
  const double cpu_started = st.config.trace ? thread_cpu_us() : -1;
  const auto micro = static_cast<std::uint64_t>(a.micro_batch);
  if (a.op == Op::forward) {
    if (st.last()) {
      computation.forward_loss(a.micro_batch, taken.input, taken.labels, taken.scale, a.size);
      note_stash(st);
      pad(st, a, started);
      record(st, SpanKind::forward, a.micro_batch, started, cpu_started);
    } else {
      train::Payload output = computation.forward(a.micro_batch, taken.input);
      note_stash(st);
      pad(st, a, started);
      record(st, SpanKind::forward, a.micro_batch, started, cpu_started);
      const auto sending = Clock::now();
      transfer(self, st.links.next, st.links.to_next, st.emulated ? st.emulated->model().next_device : std::nullopt,
               forward_atom::value, micro, std::move(output));
      sent(st, a.micro_batch, sending);
    }
    return;
  }
  if (a.op == Op::weight_gradient) {
    computation.backward_weight(a.micro_batch);
    pad(st, a, started);
    record(st, SpanKind::weight_gradient, a.micro_batch, started, cpu_started);
    return;
  }
  const bool split = a.op == Op::input_gradient;
  train::Payload input_gradient = split ? computation.backward_input(a.micro_batch, taken.gradient)
                                        : computation.backward(a.micro_batch, taken.gradient);
  pad(st, a, started);
  record(st, split ? SpanKind::input_gradient : SpanKind::backward, a.micro_batch, started, cpu_started);
  if (!st.first()) {
    const auto sending = Clock::now();
    transfer(self, st.links.previous, st.links.to_previous,
             st.emulated ? st.emulated->model().previous_device : std::nullopt, backward_atom::value, micro,
             std::move(input_gradient));
    sent(st, a.micro_batch, sending);
  }
}

/// The round's sync span ends: the replica was released (or the round was its own).
void round_ended(StageState& st) {
  if (st.sync_since) record(st, SpanKind::sync, 0, *st.sync_since);
  st.sync_since.reset();
}

/// The step's sync is done: the sync span, the optimizer step unless the round
/// `stepped` this replica already, the report. False when the optimizer failed
/// (reported).
bool released(StageActor self, bool stepped) {
  round_ended(self->state);
  return finish_step(self, stepped);
}

/// Hands this step's gradients to the stage index's round, after stepping this replica
/// first where the round says so (step_ahead: each replica on its own thread). When this
/// replica was the last, it ran the round, released the others and says whether the
/// replicas have stepped; otherwise (or on a failure, reported) nothing.
std::optional<bool> arrive(StageActor self, const ReplicaRound& round) {
  auto& st = self->state;
  // Watched as the stage's own work: a round that never returns is a stuck stage.
  const BusyScope busy(st.config.activity, st.step, StageWork::sync_round);
  if (st.config.inject_failure && st.config.inject_failure->effect == InjectedFailure::Effect::stall_sync &&
      st.config.inject_failure->stage == st.config.stage && st.config.inject_failure->step == st.step)
    std::promise<void>().get_future().wait(); // never fulfilled
  if (st.config.step_ahead) {
    const auto started = Clock::now();
    try {
      if (st.config.step_ahead(st.step)) record(st, SpanKind::step, 0, started);
    } catch (const std::exception& e) {
      fail(self, "sync", text::message_of(e));
      return std::nullopt;
    }
  }
  st.syncing = true;
  st.sync_since = Clock::now();
  ReplicaBarrier::Arrival arrival = ReplicaBarrier::Arrival::waiting;
  try {
    arrival = round.barrier->arrive(st.step, st.config.pipeline);
  } catch (const std::exception& e) {
    fail(self, "sync", text::message_of(e));
    return std::nullopt;
  }
  if (arrival == ReplicaBarrier::Arrival::waiting) return std::nullopt;
  // Between emulated devices the ring all-reduce, ready when the last replica arrived
  // (now), takes its modelled time on the links (dilated) before anyone goes on.
  if (st.emulated)
    if (const auto done = st.emulated->allreduce_end(*st.sync_since)) std::this_thread::sleep_until(*done);
  const bool stepped = arrival == ReplicaBarrier::Arrival::stepped;
  for (const stage_actor& replica : round.replicas)
    if (replica.address() != self->address()) self->send(replica, synced_atom::value, st.step, stepped);
  return stepped;
}

void advance(StageActor self);

/// A schedule that places steps: the stage's sync. With replicas in lockstep it joins
/// their round now and goes on with the device's next actions while the others come
/// (the turn has passed); its step waits for the release. Without replicas, or where
/// the round needs the step's result first (averaging, a parameter server), the round
/// is the step's. False when it failed (reported).
bool join_round(StageActor self) {
  auto& st = self->state;
  const auto* round = std::get_if<ReplicaRound>(&st.links.step_end);
  if (!round) return true;
  const std::optional<bool> stepped = arrive(self, *round);
  if (st.failed) return false;
  st.syncing = false; // not waiting: the device's next actions go on
  if (stepped) {
    round_ended(st);
    st.round_stepped = *stepped;
  } else {
    st.in_round = true;
  }
  return true;
}

/// A parameter server: the push of this step's gradient, which the server steps on;
/// the stage waits for its weights.
void push(StageActor self, const ServerPush& to) {
  auto& st = self->state;
  st.syncing = true;
  st.sync_since = Clock::now();
  self->send(to.server, ask_atom::value, static_cast<std::uint64_t>(st.config.stage),
             static_cast<std::uint64_t>(st.config.pipeline), st.step);
}

/// Scheduled or asynchronous elastic averaging: adds the answered ask's change (none
/// for a pipeline let go alone); whoever waits for the stage to settle hears. False
/// when it failed (reported).
bool take_average(StageActor self) {
  auto& st = self->state;
  try {
    if (st.config.correct) st.config.correct();
  } catch (const std::exception& e) {
    fail(self, "sync", text::message_of(e));
    return false;
  }
  st.asked.reset();
  st.answered = false;
  for (auto& promise : st.settling)
    promise.deliver(true);
  st.settling.clear();
  return true;
}

/// Scheduled or asynchronous elastic averaging, at the end of a step's actions: the
/// previous ask's change,
/// once its answer is here (the stage waits for it here), then the optimizer step on
/// this pipeline's own gradient, the snapshot, the ask (to the group scheduler, or
/// every `period` steps to the averager) and the report. With overlap
/// the stage goes on with the next step while its group forms; without, it waits for
/// the answer first. False when it waits or failed. `end` is a GroupAsk or an ElasticAsk.
bool ask(StageActor self, const StepEnd& end) {
  auto& st = self->state;
  const auto* group = std::get_if<GroupAsk>(&end);
  if (st.asked) {
    if (!st.answered) {
      st.syncing = true;
      st.sync_since = Clock::now();
      return false;
    }
    if (!take_average(self)) return false;
  }
  // The group scheduler hears every step; an averager, every `period`.
  const bool asking = group || st.step % st.config.period == 0;
  const BusyScope busy(st.config.activity, st.step);
  const auto started = Clock::now();
  try {
    st.config.computation->step(st.step, 0.0); // no clipping: each pipeline steps on its own
    if (asking && st.config.snapshot) st.config.snapshot();
  } catch (const std::exception& e) {
    fail(self, "optimizer step", text::message_of(e));
    return false;
  }
  record(st, SpanKind::step, 0, started);
  const std::uint64_t stage = st.config.stage, pipeline = st.config.pipeline;
  if (group)
    self->send(group->scheduler, ask_atom::value, stage, pipeline, st.step);
  else if (asking)
    self->send(std::get<ElasticAsk>(end).averager, average_atom::value, std::vector<std::uint64_t>{pipeline},
               std::vector<std::uint64_t>{st.step});
  if (asking) st.asked = st.step;
  self->send(st.links.pipeline, done_atom::value, st.step, stage, step_loss(st));
  st.cursor = 0;
  ++st.step;
  if (!asking || st.config.overlap) return true;
  st.syncing = true;
  st.sync_since = Clock::now();
  return false;
}

/// The answer to the pending ask is here (from the averager, or the group scheduler's
/// leave to go on alone). The stage takes its
/// change now if it is between steps (nothing computes on the parameters), else when
/// its step's actions end; if it waits for the answer, it goes on.
void answered(StageActor self, std::uint64_t step) {
  auto& st = self->state;
  if (!st.asked || *st.asked != step || st.answered) {
    fail(self, "sync", "an answer came for step " + std::to_string(step) + ", which asked nothing");
    return;
  }
  st.answered = true;
  if (st.cursor == 0 && !take_average(self)) return;
  if (!st.syncing) return;
  if (st.sync_since) record(st, SpanKind::sync, 0, *st.sync_since);
  st.sync_since.reset();
  st.syncing = false;
  advance(self);
}

/// Whether the device's turn is this stage's (always, without chunks).
bool has_turn(const StageState& st) { return !st.config.turns || st.config.turns->mine(st.config.stage); }

/// With chunks, the device's turn passes on, to the chunk it wakes.
void pass_turn(StageActor self) {
  auto& st = self->state;
  if (!st.config.turns) return;
  if (const auto next = st.config.turns->pass(st.config.stage)) self->send(*next, turn_atom::value);
}

/// Runs every action whose inputs are here (and, with chunks, whose turn it is on the
/// device), in schedule order; at the end of the schedule (or at the step it places)
/// has the gradients reduced (or not, without replicas), steps and goes on with the
/// next step's actions, whose inputs may be here already.
void advance(StageActor self) {
  auto& st = self->state;
  if (st.failed || st.syncing) return;
  const auto& actions = st.config.actions;
  for (;;) {
    while (st.cursor < actions.size() && ready(st, actions[st.cursor]) && has_turn(st)) {
      const Action& a = actions[st.cursor];
      if (a.op == Op::step) break; // the step's end, below
      if (a.op == Op::sync) {
        ++st.cursor;
        pass_turn(self);
        if (!join_round(self)) return;
        continue;
      }
      // Bytes still on their way in are part of the wait, not of the action.
      if (!st.waiting_since && !landed(st, a)) st.waiting_since = Clock::now();
      bool taking = true; // else computing
      try {
        TakenIn taken = take_in(st, a);
        taking = false;
        if (st.waiting_since) {
          record(st, SpanKind::wait, a.micro_batch, *st.waiting_since);
          st.waiting_since.reset();
        }
        run_action(self, a, std::move(taken));
        pass_turn(self);
      } catch (const std::exception& e) {
        const bool forward = a.op == Op::forward;
        constexpr const char* work[] = {"forward", "backward", "input gradient", "weight gradient"};
        fail(self,
             std::string(taking ? (forward ? "taking in the input" : "taking in the gradient")
                                : work[static_cast<std::size_t>(a.op)]) +
                 " of micro-batch " + std::to_string(a.micro_batch),
             text::message_of(e));
        return;
      }
      ++st.cursor;
    }
    // At the step the schedule places (its turn come), or past the last action.
    const bool placed = st.cursor < actions.size() && actions[st.cursor].op == Op::step;
    if (st.cursor < actions.size() && !(placed && has_turn(st))) {
      if (!st.waiting_since) st.waiting_since = Clock::now();
      return;
    }
    // The step's end, as the run's sync mode has it; true: on with the next step. A
    // placed step keeps the device's turn until the optimizer has run, where it runs here.
    const bool next = std::visit(
        [&](const auto& end) {
          using End = std::decay_t<decltype(end)>;
          if constexpr (std::is_same_v<End, Alone>) {
            const bool stepped = released(self, false);
            if (stepped && placed) pass_turn(self);
            return stepped;
          } else if constexpr (std::is_same_v<End, ReplicaRound>) {
            if (placed) {
              if (!st.round_stepped) { // joined at the sync, not yet released
                st.syncing = true;
                return false;
              }
              const bool stepped = released(self, *std::exchange(st.round_stepped, std::nullopt));
              if (stepped) pass_turn(self);
              return stepped;
            }
            const std::optional<bool> stepped = arrive(self, end);
            return stepped && released(self, *stepped);
          } else if constexpr (std::is_same_v<End, ServerPush>) {
            if (placed) pass_turn(self);
            push(self, end);
            return false;
          } else {
            const bool on = ask(self, st.links.step_end);
            if (placed && st.cursor == 0) pass_turn(self); // it stepped (else it waits for an answer first)
            return on;
          }
        },
        st.links.step_end);
    if (!next) return;
  }
}

stage_actor::behavior_type stage_behavior(StageActor self, StageConfig config) {
  self->state.config = std::move(config);
  self->state.step = self->state.config.first_step;
  if (const auto& e = self->state.config.emulated)
    self->state.emulated.emplace(*e, self->state.config.origin, self->state.config.pipeline, self->state.config.stage);
  return {
      [=](connect_atom, StageLinks& links) {
        auto& st = self->state;
        // The first message, on the actor's own thread.
        if (st.config.core) train::bind_thread_to(*st.config.core);
        st.links = std::move(links);
        if (st.config.turns) {
          // Joined, it hears when the turn passes to it; it may be its turn already.
          st.config.turns->join(st.config.stage, self);
          advance(self);
        }
      },
      [=](turn_atom) { advance(self); },
      [=](forward_atom, std::uint64_t step, std::uint64_t micro, Parcel& input) {
        if (take(self, input, "an input", step, micro, self->state.inputs)) advance(self);
      },
      [=](labels_atom, std::uint64_t step, std::uint64_t micro, Parcel& labels, double scale) {
        auto& st = self->state;
        try {
          st.labels[{step, micro}] = {open(labels, st.config.transport, st.config.make_rows), scale};
        } catch (const std::exception& e) {
          fail(self, "taking in labels of micro-batch " + std::to_string(micro), text::message_of(e));
          return;
        }
        advance(self);
      },
      [=](backward_atom, std::uint64_t step, std::uint64_t micro, Parcel& gradient) {
        if (take(self, gradient, "a gradient", step, micro, self->state.gradients)) advance(self);
      },
      [=](synced_atom, std::uint64_t step, bool stepped) {
        auto& st = self->state;
        if (st.failed) return;
        if (std::holds_alternative<GroupAsk>(st.links.step_end) ||
            std::holds_alternative<ElasticAsk>(st.links.step_end)) {
          answered(self, step);
          return;
        }
        if (st.in_round && step == st.step) { // joined at a placed sync
          st.in_round = false;
          round_ended(st);
          if (!st.syncing) { // not at its step yet
            st.round_stepped = stepped;
            return;
          }
          if (released(self, stepped)) {
            pass_turn(self);
            advance(self);
          }
          return;
        }
        if (!st.syncing || step != st.step) {
          fail(self, "sync", "a replica released step " + std::to_string(step) + ", which is not waiting");
          return;
        }
        if (released(self, stepped)) advance(self);
      },
      [=](norm_atom, std::uint64_t step, double norm) {
        auto& st = self->state;
        if (st.failed) return;
        if (!st.norming || step != st.step) {
          fail(self, "gradient norm",
               "its pipeline said the norm of step " + std::to_string(step) + ", which is not waiting for one");
          return;
        }
        st.norming = false;
        st.syncing = false;
        if (st.sync_since) record(st, SpanKind::sync, 0, *st.sync_since);
        st.sync_since.reset();
        st.gradient_norm = norm;
        // A step the schedule placed passed the device's turn as it asked.
        if (finish_step(self, false)) advance(self);
      },
      [=](settle_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (!st.asked || st.failed) return true;
        st.settling.push_back(self->make_response_promise<bool>());
        return st.settling.back();
      },
  };
}

} // namespace

stage_actor spawn_stage(caf::actor_system& system, StageConfig config) {
  if (config.detached) return system.spawn<caf::detached>(stage_behavior, std::move(config));
  return system.spawn(stage_behavior, std::move(config));
}

} // namespace actorpipe::actors
