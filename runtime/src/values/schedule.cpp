/// Schedule validation: counts and sizes per virtual stage first, then a dry run of the
/// devices' action lists in dependency order that either finishes or names what waits
/// on what; where chunks sit; peak stashes.

#include <actorpipe/schedule.hpp>

#include <algorithm>
#include <numeric>

namespace actorpipe {

namespace {

std::string stage_name(std::size_t s) { return "stage " + std::to_string(s); }

/// "stage 2" without chunks; "stage 2 (device 1, chunk 1)" with them.
std::string virtual_stage_name(const Schedule& schedule, std::size_t v) {
  if (schedule.chunks == 1) return stage_name(v);
  const ChunkPlace at = schedule.place_of(v);
  return stage_name(v) + " (device " + std::to_string(at.stage) + ", chunk " + std::to_string(at.chunk) + ")";
}

/// Counts, sizes and order on one virtual stage: each micro-batch's F once, then its B
/// once or its I and then its W once each; where `placed`, one sync once every
/// micro-batch's gradients are made, and one step after it, last.
Status check_stage(const Schedule& schedule, std::size_t v, const std::vector<Action>& actions, bool placed) {
  const std::size_t m = schedule.micro_batch_sizes.size();
  struct Counts {
    int forwards = 0, backwards = 0, inputs = 0, weights = 0;
  };
  std::vector<Counts> seen(m);
  std::size_t finished = 0; // micro-batches whose B or W has run
  int syncs = 0, steps = 0;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    const std::string where = "schedule '" + schedule.name + "': " + virtual_stage_name(schedule, v) + " action " +
                              std::to_string(i) + " (" + to_string(a) + "): ";
    if (steps > 0) return Error::bad_input(where + "after the stage's step, which ends its iteration");
    if (a.op == Op::sync) {
      if (++syncs > 1) return Error::bad_input(where + "a second sync of the stage");
      if (finished < m)
        return Error::bad_input(where + "a sync before the stage's gradients are made (" +
                                std::to_string(m - finished) + " of its micro-batches' B or W come after it)");
      continue;
    }
    if (a.op == Op::step) {
      if (syncs == 0) return Error::bad_input(where + "a step before the stage's sync");
      ++steps;
      continue;
    }
    if (syncs > 0) return Error::bad_input(where + "after the stage's sync: its gradients are final there");
    if (a.micro_batch >= m)
      return Error::bad_input(where + "micro-batch " + std::to_string(a.micro_batch) + " does not exist (there are " +
                              std::to_string(m) + ")");
    if (a.size != schedule.micro_batch_sizes[a.micro_batch])
      return Error::bad_input(where + "size " + std::to_string(a.size) + " differs from micro-batch " +
                              std::to_string(a.micro_batch) + "'s " +
                              std::to_string(schedule.micro_batch_sizes[a.micro_batch]));
    Counts& k = seen[a.micro_batch];
    switch (a.op) {
    case Op::forward:
      if (++k.forwards > 1) return Error::bad_input(where + "a second forward of the micro-batch");
      break;
    case Op::backward:
    case Op::input_gradient:
      if (k.forwards == 0) return Error::bad_input(where + "a backward before the micro-batch's forward");
      if (k.backwards + k.inputs > 0) return Error::bad_input(where + "a second backward of the micro-batch");
      ++(a.op == Op::backward ? k.backwards : k.inputs);
      if (a.op == Op::backward) ++finished;
      break;
    case Op::weight_gradient:
      if (k.inputs == 0)
        return Error::bad_input(where + (k.backwards
                                             ? "a weight gradient of a micro-batch whose backward was whole (B)"
                                             : "a weight gradient before the micro-batch's input gradient (I)"));
      if (++k.weights > 1) return Error::bad_input(where + "a second weight gradient of the micro-batch");
      ++finished;
      break;
    case Op::sync:
    case Op::step: break; // above
    }
  }
  if (placed && steps == 0)
    return Error::bad_input("schedule '" + schedule.name + "': " + virtual_stage_name(schedule, v) +
                            (syncs == 0 ? " has no sync and step, where the schedule places the others'"
                                        : " has a sync and no step after it"));
  for (std::size_t k = 0; k < m; ++k) {
    const Counts& c = seen[k];
    const char* missing = c.forwards == 0                  ? "forward"
                          : c.backwards + c.inputs == 0    ? "backward"
                          : c.inputs > 0 && c.weights == 0 ? "weight gradient (W, after its I)"
                                                           : nullptr;
    if (missing)
      return Error::bad_input("schedule '" + schedule.name + "': " + virtual_stage_name(schedule, v) +
                              " never runs the " + missing + " of micro-batch " + std::to_string(k));
  }
  return Ok{};
}

/// "F3" (or "F3@1") for a forward; "B3 or I3" for a backward: the action `a` waits for
/// on the neighbouring virtual stage, on that stage's chunk.
std::string awaited(const Action& a, std::uint32_t chunk) {
  Action on = a;
  on.chunk = chunk;
  if (a.op == Op::forward) return to_string(on);
  on.op = Op::backward;
  const std::string whole = to_string(on);
  on.op = Op::input_gradient;
  return whole + " or " + to_string(on);
}

} // namespace

std::uint64_t Schedule::samples() const {
  return std::accumulate(micro_batch_sizes.begin(), micro_batch_sizes.end(), std::uint64_t{0});
}

std::size_t Schedule::virtual_stage(std::size_t stage, std::uint32_t chunk) const {
  const std::size_t devices = stages.size();
  if (shape == ChunkShape::v && chunk % 2 == 1) return (chunk + 1) * devices - 1 - stage;
  return chunk * devices + stage;
}

ChunkPlace Schedule::place_of(std::size_t v) const {
  const std::size_t devices = std::max<std::size_t>(stages.size(), 1);
  const auto chunk = static_cast<std::uint32_t>(v / devices);
  const std::size_t offset = v % devices;
  if (shape == ChunkShape::v && chunk % 2 == 1) return {devices - 1 - offset, chunk};
  return {offset, chunk};
}

bool Schedule::places_steps() const {
  for (const auto& actions : stages)
    for (const Action& a : actions)
      if (!per_micro_batch(a.op)) return true;
  return false;
}

std::vector<std::vector<Action>> Schedule::virtual_stage_actions() const {
  std::vector<std::vector<Action>> out(virtual_stages());
  for (std::size_t d = 0; d < stages.size(); ++d)
    for (const Action& a : stages[d])
      if (a.chunk < chunks) out[virtual_stage(d, a.chunk)].push_back(a);
  return out;
}

std::string to_string(const Action& action) {
  static constexpr char letters[] = {'F', 'B', 'I', 'W'};
  std::string text = action.op == Op::sync ? std::string("sync")
                     : action.op == Op::step
                         ? std::string("step")
                         : letters[static_cast<std::size_t>(action.op)] + std::to_string(action.micro_batch);
  if (action.chunk > 0) text += "@" + std::to_string(action.chunk);
  return text;
}

const char* to_string(ChunkShape shape) { return shape == ChunkShape::v ? "v" : "loop"; }

std::optional<ChunkShape> chunk_shape_named(std::string_view text) {
  if (text == "loop") return ChunkShape::loop;
  if (text == "v") return ChunkShape::v;
  return std::nullopt;
}

Status validate(const Schedule& schedule) {
  const std::size_t devices = schedule.stages.size();
  const std::size_t m = schedule.micro_batch_sizes.size();
  if (devices == 0) return Error::bad_input("schedule '" + schedule.name + "': has no stages");
  if (m == 0) return Error::bad_input("schedule '" + schedule.name + "': has no micro-batches");
  if (schedule.chunks == 0) return Error::bad_input("schedule '" + schedule.name + "': has no chunks");
  if (schedule.shape == ChunkShape::v && schedule.chunks != 2)
    return Error::bad_input("schedule '" + schedule.name + "': a V shape has 2 chunks, not " +
                            std::to_string(schedule.chunks));
  for (std::size_t k = 0; k < m; ++k)
    if (schedule.micro_batch_sizes[k] == 0)
      return Error::bad_input("schedule '" + schedule.name + "': micro-batch " + std::to_string(k) + " is empty");
  for (std::size_t d = 0; d < devices; ++d)
    for (std::size_t i = 0; i < schedule.stages[d].size(); ++i)
      if (const Action& a = schedule.stages[d][i]; a.chunk >= schedule.chunks)
        return Error::bad_input("schedule '" + schedule.name + "': " + stage_name(d) + " action " + std::to_string(i) +
                                " (" + to_string(a) + "): chunk " + std::to_string(a.chunk) + " does not exist (" +
                                (schedule.chunks == 1 ? std::string("the schedule has no chunks")
                                                      : "there are " + std::to_string(schedule.chunks)) +
                                ")");
  const std::size_t V = schedule.virtual_stages();
  const auto per_virtual_stage = schedule.virtual_stage_actions();
  const bool placed = schedule.places_steps();
  for (std::size_t v = 0; v < V; ++v)
    if (auto status = check_stage(schedule, v, per_virtual_stage[v], placed); !status) return status;

  // Dry run over the devices' lists: done[v][k] marks finished actions of virtual
  // stage v; a device advances while its next action's input is there, and wakes the
  // devices of the neighbouring virtual stages.
  std::vector<std::vector<char>> forward_done(V, std::vector<char>(m, 0)), backward_done = forward_done;
  std::vector<std::size_t> next(devices, 0);
  // backward_done marks the gradient a virtual stage sent back (its B or I); a W waits
  // for nothing from elsewhere, its I coming before it in the device's own list.
  auto ready = [&](std::size_t d) {
    const Action& a = schedule.stages[d][next[d]];
    const std::size_t v = schedule.virtual_stage(d, a.chunk);
    if (a.op == Op::forward) return v == 0 || forward_done[v - 1][a.micro_batch] != 0;
    // A sync waits for the replicas of its stage, which run the same lists; a step for
    // its sync, before it in the same list.
    if (a.op == Op::weight_gradient || !per_micro_batch(a.op)) return true;
    return v + 1 == V || backward_done[v + 1][a.micro_batch] != 0;
  };
  std::vector<std::size_t> work(devices);
  std::iota(work.begin(), work.end(), std::size_t{0});
  while (!work.empty()) {
    const std::size_t d = work.back();
    work.pop_back();
    while (next[d] < schedule.stages[d].size() && ready(d)) {
      const Action& a = schedule.stages[d][next[d]++];
      const std::size_t v = schedule.virtual_stage(d, a.chunk);
      if (a.op == Op::forward) {
        forward_done[v][a.micro_batch] = 1;
        if (v + 1 < V) work.push_back(schedule.place_of(v + 1).stage);
      } else if (sends_gradient(a.op)) {
        backward_done[v][a.micro_batch] = 1;
        if (v > 0) work.push_back(schedule.place_of(v - 1).stage);
      }
    }
  }

  std::string waiting;
  for (std::size_t d = 0; d < devices; ++d) {
    if (next[d] == schedule.stages[d].size()) continue;
    const Action& a = schedule.stages[d][next[d]];
    const std::size_t v = schedule.virtual_stage(d, a.chunk);
    const ChunkPlace from = schedule.place_of(a.op == Op::forward ? v - 1 : v + 1);
    waiting += (waiting.empty() ? "" : "; ") + stage_name(d) + " waits at " + to_string(a) + " for " +
               awaited(a, from.chunk) + " of " + stage_name(from.stage);
  }
  if (!waiting.empty()) return Error::bad_input("schedule '" + schedule.name + "': deadlock: " + waiting);
  return Ok{};
}

namespace {

/// Samples held after `a` by the stash it touches: a forward adds its micro-batch, a B
/// or a W frees it; an I keeps it for its W; a sync or step touches none.
void hold(std::uint64_t& held, const Action& a) {
  if (a.op == Op::forward)
    held += a.size;
  else if (a.op == Op::backward || a.op == Op::weight_gradient)
    held -= std::min<std::uint64_t>(held, a.size);
}

} // namespace

std::vector<std::uint64_t> peak_stashed_samples(const Schedule& schedule) {
  std::vector<std::uint64_t> peaks;
  for (const auto& actions : schedule.virtual_stage_actions()) {
    std::uint64_t held = 0, peak = 0;
    for (const Action& a : actions) {
      hold(held, a);
      peak = std::max(peak, held);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

std::vector<double> peak_stash_per_device(const Schedule& schedule) {
  std::vector<double> peaks;
  for (const auto& actions : schedule.stages) {
    std::vector<std::uint64_t> held(schedule.chunks, 0);
    std::uint64_t total = 0, peak = 0;
    for (const Action& a : actions) {
      if (a.chunk >= held.size()) continue;
      total -= held[a.chunk];
      hold(held[a.chunk], a);
      total += held[a.chunk];
      peak = std::max(peak, total);
    }
    peaks.push_back(static_cast<double>(peak) / schedule.chunks);
  }
  return peaks;
}

} // namespace actorpipe
