/// IterationModel: the engine of simulate() run on one pipeline of each kind of placement
/// (actorpipe/iteration_model.hpp says which, and why).

#include <actorpipe/iteration_model.hpp>

#include "sim/engine.hpp"
#include "sim/model_builder.hpp"
#include "sim/steady_state.hpp"
#include "sim/topology.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

namespace actorpipe {

struct IterationModel::Impl {
  const ClusterSpec* cluster = nullptr;
  IterationSetup setup; ///< as given
  bool exact = false;
  /// What is simulated: the whole schedule or, where it has more micro-batches than
  /// the setup simulates, its first few (`brief`); where the lanes bind the steady
  /// state and the setup asks for it, the whole schedule (`whole`), or twice the few
  /// as well as them (`twice`, where the schedule has more than thrice the few).
  struct Probe {
    Schedule schedule;
    /// The micro-batches past it: each size, and how many of the schedule's have it.
    std::vector<std::pair<std::uint32_t, std::size_t>> rest;
  };
  Probe brief, whole, twice;
  std::size_t simulated = 0; ///< actions simulated so far
  /// Pipelines simulated: every one, or representatives.
  std::size_t representatives() const { return model.instances.size() / std::max<std::size_t>(1, model.stages); }
  /// The first `k` micro-batches of the setup's schedule (all where k is 0).
  Probe probe(std::size_t k) const;
  std::optional<sim::SteadyState> steady; ///< set where there is a `brief` probe
  double last_steady_ms = 0;              ///< what the last estimate's period added
  double optimizer_factor = 1;
  std::vector<const Device*> device; ///< per stage, its slowest replica
  std::vector<std::uint64_t> memory; ///< per stage, its smallest replica's
  std::vector<double> cut_ms_per_byte, cut_latency_ms;
  /// A lane the representative's sends cross: which of its sends (2·cut + backward)
  /// cross it, and how many pipelines' sends cross it at each send.
  struct Lane {
    double bytes_per_ms = 0;
    std::vector<std::size_t> own;
    std::vector<std::pair<std::size_t, int>> load;
  };
  std::vector<Lane> lanes;  ///< as model.lane_bytes_per_ms
  std::vector<float> share; ///< per lane, bytes all pipelines send across it per byte of ours
  sim::Model model;
  /// Per virtual stage, what its compute adds up to over the whole schedule: least_ms()'s
  /// terms. Per kind of action (F, B, I, W): how many, and their samples.
  struct Work {
    double actions[4] = {}, samples[4] = {};
    /// The forwards before the first action that sends a gradient back (B or I):
    /// until then the stage waits on nothing but its input.
    double warm_up_actions = 0, warm_up_samples = 0;
    bool sends_gradients = false; ///< whether any of its actions does
  };
  std::vector<Work> work;
  double least_samples = 0;           ///< the smallest micro-batch's
  std::vector<double> processor_work; ///< least_ms()'s buffer
  std::vector<double> instance_work;  ///< least_ms()'s buffer: every action of each instance's stage
  std::vector<double> round_trip;     ///< least_ms()'s buffer: per stage, as it says

  /// Sets every instance's compute and sends from the stages' figures.
  void set_costs(const std::vector<StageFigures>& stages);
};

namespace {

constexpr std::size_t max_representatives = 4;

/// The schedule's first `k` micro-batches, each device keeping its order: what fills
/// the pipeline and drains it. Every action of a kept micro-batch is kept, so the
/// dependencies that let the whole schedule run let this one run too; and where a
/// schedule of k micro-batches is built alike (GPipe, 1F1B), it is that schedule.
/// The whole schedule where k is 0 or not less than its micro-batches.
Schedule first_micro_batches(const Schedule& whole, std::size_t k) {
  Schedule probe = whole;
  if (k == 0 || k >= whole.micro_batch_sizes.size()) return probe;
  probe.micro_batch_sizes.resize(k);
  for (auto& list : probe.stages)
    std::erase_if(list, [&](const Action& a) { return per_micro_batch(a.op) && a.micro_batch >= k; });
  return probe;
}

std::size_t actions_per_pipeline(const Schedule& schedule) {
  std::size_t actions = 0;
  for (const auto& stage : schedule.stages)
    actions += stage.size();
  return actions;
}

/// Whether the lanes bind a steady state of period `p` (iteration_ms() says how).
bool lanes_bind(const sim::SteadyState::Period& p) {
  return 2 * p.lanes > std::max(p.processors, p.slowest_loop()) ||
         (p.lanes > 0 && p.slowest_loop() + p.lanes > p.processors);
}

/// Bytes/ms of a route once each of its lanes is shared `uses(lane)` ways.
template <class Uses> double shared_bytes_per_ms(const sim::Route& route, const sim::Topology& topology, Uses uses) {
  double bytes_per_ms = route.bytes_per_ms;
  for (std::uint8_t l = 0; l < route.count; ++l)
    bytes_per_ms = std::min(bytes_per_ms, topology.bytes_per_ms(route.lanes[l]) / std::max(1, uses(route.lanes[l])));
  return bytes_per_ms;
}

} // namespace

IterationModel::Impl::Probe IterationModel::Impl::probe(std::size_t k) const {
  const Schedule& whole = setup.schedule;
  Probe probe{first_micro_batches(whole, k), {}};
  std::map<std::uint32_t, std::size_t> rest;
  for (std::size_t i = probe.schedule.micro_batch_sizes.size(); i < whole.micro_batch_sizes.size(); ++i)
    ++rest[whole.micro_batch_sizes[i]];
  probe.rest.assign(rest.begin(), rest.end());
  return probe;
}

IterationModel::IterationModel(const ClusterSpec& cluster, IterationSetup setup) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cluster = &cluster;
  m.optimizer_factor = setup.optimizer_factor;
  m.setup = std::move(setup);
  m.brief = m.probe(m.setup.simulated_micro_batches);
  if (!m.brief.rest.empty()) m.steady.emplace(m.setup.schedule);
  const auto& devices = m.setup.devices;
  const std::size_t P = devices.size();
  const std::size_t S = P ? devices.front().size() : 0;
  const sim::Topology topology(cluster);

  m.device.assign(S, nullptr);
  m.memory.assign(S, std::numeric_limits<std::uint64_t>::max());
  for (const auto& pipeline : devices)
    for (std::size_t s = 0; s < S; ++s) {
      const Device& d = cluster.devices[pipeline[s]];
      if (!m.device[s] || d.speed < m.device[s]->speed ||
          (d.speed == m.device[s]->speed && d.memory_bandwidth < m.device[s]->memory_bandwidth))
        m.device[s] = &d;
      m.memory[s] = std::min(m.memory[s], d.memory_bytes);
    }

  // Per cut and direction ("send" 2·cut + backward), how many pipelines' sends cross
  // each lane; and per pipeline, how long a byte takes over all its sends when every
  // lane's bandwidth is split among all the sends that cross it, of every cut (a lane
  // may serve two stages where their replicas share a server). The slowest pipeline
  // stands for all.
  const std::size_t sends = S > 0 ? 2 * (S - 1) : 0;
  auto route_of = [&](std::size_t p, std::size_t send) {
    const std::size_t cut = send / 2;
    return send % 2 ? topology.route(devices[p][cut + 1], devices[p][cut])
                    : topology.route(devices[p][cut], devices[p][cut + 1]);
  };
  std::vector<int> uses(topology.lane_count(), 0), total(topology.lane_count(), 0);
  std::vector<std::vector<std::pair<sim::LaneId, int>>> crossings(sends); ///< per send: lane, pipelines
  for (std::size_t c = 0; c < sends; ++c) {
    std::vector<sim::LaneId> touched;
    for (std::size_t p = 0; p < P; ++p) {
      const sim::Route r = route_of(p, c);
      for (std::uint8_t l = 0; l < r.count; ++l)
        if (uses[r.lanes[l]]++ == 0) touched.push_back(r.lanes[l]);
    }
    for (sim::LaneId lane : touched) {
      crossings[c].push_back({lane, uses[lane]});
      total[lane] += uses[lane];
      uses[lane] = 0;
    }
  }
  std::vector<double> ms_per_byte(P, 0.0);
  for (std::size_t c = 0; c < sends; ++c)
    for (std::size_t p = 0; p < P; ++p) {
      const double bpm = shared_bytes_per_ms(route_of(p, c), topology, [&](sim::LaneId lane) { return total[lane]; });
      ms_per_byte[p] += std::isinf(bpm) ? 0.0 : 1.0 / bpm;
    }
  // Pipelines placed alike (the same kind of link at every cut, the same device speeds)
  // stand for each other; one of each kind is simulated, the slowest first, at most
  // `max_representatives` (the slowest ones), so that a pipeline placed unlike the
  // others, such as the last of a partial pod, is seen with its own sends.
  std::map<std::vector<double>, std::size_t> kinds; ///< placement signature → representative
  std::vector<std::size_t> order(P);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ms_per_byte[a] > ms_per_byte[b]; });
  // Pipelines that share a lane queue in an order, and the last in line can fall behind
  // at every cut, which no single representative shows: where it is affordable, every
  // pipeline is simulated as itself.
  const bool in_full = P * actions_per_pipeline(m.brief.schedule) <= m.setup.full_simulation_actions;
  m.exact = in_full;
  std::vector<std::size_t> reps(in_full ? P : 0);
  std::iota(reps.begin(), reps.end(), std::size_t{0}); // every pipeline, as simulate() orders them
  for (std::size_t p : order) {
    if (in_full) break;
    std::vector<double> signature;
    for (std::size_t s = 0; s < S; ++s)
      signature.push_back(cluster.devices[devices[p][s]].speed);
    for (std::size_t c = 0; c < sends; ++c) {
      const sim::Route r = route_of(p, c);
      signature.push_back(r.count);
      signature.push_back(r.bytes_per_ms);
    }
    if (kinds.try_emplace(std::move(signature), p).second && reps.size() < max_representatives) reps.push_back(p);
  }
  if (m.setup.whole_pod && !in_full) {
    // The slowest representative's pod, in simulate()'s order, then the other kinds'.
    std::vector<char> crossed_by_slowest(topology.lane_count(), 0);
    for (std::size_t c = 0; c < sends; ++c) {
      const sim::Route r = route_of(reps.front(), c);
      for (std::uint8_t l = 0; l < r.count; ++l)
        crossed_by_slowest[r.lanes[l]] = 1;
    }
    std::vector<std::size_t> pod;
    for (std::size_t p = 0; p < P; ++p) {
      bool shares = p == reps.front();
      for (std::size_t c = 0; c < sends && !shares; ++c) {
        const sim::Route r = route_of(p, c);
        for (std::uint8_t l = 0; l < r.count && !shares; ++l)
          shares = crossed_by_slowest[r.lanes[l]];
      }
      if (shares) pod.push_back(p);
    }
    for (std::size_t k = 1; k < reps.size(); ++k)
      if (std::find(pod.begin(), pod.end(), reps[k]) == pod.end()) pod.push_back(reps[k]);
    reps = std::move(pod);
  }
  const std::size_t rep = order.front(); // the slowest

  // The representatives' sends keep their routes at full speed; each lane on them is
  // occupied, per byte of their own, for as long as it takes to carry every pipeline's
  // sends across it too (iteration_ms() weighs that by the sends' bytes).
  constexpr sim::LaneId unmodelled = std::numeric_limits<sim::LaneId>::max();
  std::vector<sim::LaneId> compact(topology.lane_count(), unmodelled); ///< cluster lane → the model's, if any
  std::vector<std::vector<sim::Route>> routes(reps.size(), std::vector<sim::Route>(sends));
  m.cut_ms_per_byte.assign(S > 0 ? S - 1 : 0, 0.0);
  m.cut_latency_ms.assign(S > 0 ? S - 1 : 0, 0.0);
  for (std::size_t k = 0; k < reps.size(); ++k)
    for (std::size_t c = 0; c < sends; ++c) {
      const sim::Route r = route_of(reps[k], c);
      sim::Route& own = routes[k][c];
      own.latency_ms = r.latency_ms;
      own.bytes_per_ms = r.bytes_per_ms;
      for (std::uint8_t l = 0; l < r.count; ++l) {
        sim::LaneId& id = compact[r.lanes[l]];
        if (id == unmodelled) {
          id = static_cast<sim::LaneId>(m.lanes.size());
          m.lanes.push_back({topology.bytes_per_ms(r.lanes[l]), {}, {}});
        }
        m.lanes[id].own.push_back(c);
        own.lanes[own.count++] = id;
      }
    }
  for (std::size_t c = 0; c < sends; ++c) {
    const sim::Route r = route_of(rep, c);
    const std::size_t cut = c / 2;
    const double shared = shared_bytes_per_ms(r, topology, [&](sim::LaneId lane) {
      for (const auto& [crossed, pipelines] : crossings[c])
        if (crossed == lane) return pipelines;
      return 1;
    });
    m.cut_ms_per_byte[cut] = std::max(m.cut_ms_per_byte[cut], std::isinf(shared) ? 0.0 : 1.0 / shared);
    m.cut_latency_ms[cut] = std::max(m.cut_latency_ms[cut], r.latency_ms);
  }
  for (std::size_t c = 0; c < sends; ++c)
    for (const auto& [lane, pipelines] : crossings[c])
      if (compact[lane] != unmodelled) m.lanes[compact[lane]].load.push_back({c, pipelines});
  m.model.schedule = &m.brief.schedule;
  m.model.stages = S;
  m.model.processors = reps.size() * S;
  m.model.action_overhead_ms = m.setup.action_overhead_ms;
  if (!m.brief.rest.empty()) m.whole = m.probe(0);
  // Extrapolating costs 3k micro-batches: only where the schedule has more.
  if (const std::size_t k = m.setup.simulated_micro_batches; k > 0 && m.setup.schedule.micro_batch_sizes.size() > 3 * k)
    m.twice = m.probe(2 * k);
  for (std::size_t k = 0; k < reps.size(); ++k)
    for (std::size_t s = 0; s < S; ++s) {
      sim::Instance instance;
      instance.pipeline = k;
      instance.stage = s;
      // A device's chunks compute in turn, on one processor.
      instance.processor = k * S + m.setup.schedule.virtual_stage(m.setup.schedule.place_of(s).stage, 0);
      // Of representatives, the first computes at the slowest replica's speed, which all
      // wait for.
      instance.device =
          k == 0 && !in_full ? static_cast<DeviceId>(m.device[s] - cluster.devices.data()) : devices[reps[k]][s];
      if (s + 1 < S) instance.to_next = routes[k][2 * s];
      if (s > 0) instance.to_previous = routes[k][2 * (s - 1) + 1];
      m.model.instances.push_back(instance);
    }
  for (std::size_t s = 0; s < S; ++s) {
    std::vector<DeviceId> replicas;
    for (const auto& pipeline : devices)
      replicas.push_back(pipeline[s]);
    std::vector<std::uint32_t> members;
    for (std::size_t k = 0; k < reps.size(); ++k)
      members.push_back(static_cast<std::uint32_t>(k * S + s));
    m.model.groups.push_back(sim::make_group(topology, cluster, std::move(members), replicas, 0.0));
  }
  // The rings share lanes with the sends and with each other, as in simulate(): an
  // all-reduce waits for the lanes it crosses to be free. A lane no send crosses is
  // only ever held by rings, so lanes crossed by the same rings, as often, at the same
  // bandwidth are always free at the same moment: one of them stands for all, and a
  // ring over thousands of replicas costs an evaluation a few lanes, not thousands.
  // (A lane only one ring crosses, and no send, delays nothing at all.)
  // Each lane no send crosses, with the rings that cross it and how often: sorted by
  // lane, each lane's rings are one run, in ring order.
  struct Crossing {
    sim::LaneId lane;
    std::uint32_t ring;
    int uses;
  };
  std::vector<Crossing> crossed;
  for (std::uint32_t g = 0; g < m.model.groups.size(); ++g) {
    const sim::Group& group = m.model.groups[g];
    for (std::size_t l = 0; l < group.lanes.size(); ++l)
      if (compact[group.lanes[l]] == unmodelled) crossed.push_back({group.lanes[l], g, group.lane_uses[l]});
  }
  std::stable_sort(crossed.begin(), crossed.end(),
                   [](const Crossing& a, const Crossing& b) { return a.lane < b.lane; });
  std::vector<std::uint32_t> first_crossing(topology.lane_count(), 0); ///< per lane, its run in `crossed`
  for (std::size_t k = crossed.size(); k-- > 0;)
    first_crossing[crossed[k].lane] = static_cast<std::uint32_t>(k);
  auto rings_of = [&](sim::LaneId lane) {
    std::vector<std::pair<std::uint32_t, int>> rings;
    for (std::size_t k = first_crossing[lane]; k < crossed.size() && crossed[k].lane == lane; ++k)
      rings.push_back({crossed[k].ring, crossed[k].uses});
    return rings;
  };
  std::map<std::pair<double, std::vector<std::pair<std::uint32_t, int>>>, sim::LaneId> classes;
  // Per model lane, the last ring (plus one) that kept it: a ring over thousands of
  // replicas crosses thousands of lanes, and searching what it kept for each would
  // cost their square.
  std::vector<std::size_t> kept_by;
  for (std::size_t g = 0; g < m.model.groups.size(); ++g) {
    sim::Group& group = m.model.groups[g];
    std::vector<std::pair<sim::LaneId, int>> kept;
    for (std::size_t l = 0; l < group.lanes.size(); ++l) {
      const sim::LaneId lane = group.lanes[l];
      sim::LaneId id = compact[lane];
      if (id == unmodelled) {
        const std::size_t k = first_crossing[lane];
        if (k + 1 >= crossed.size() || crossed[k + 1].lane != lane) continue; // one ring only
        const auto [at, added] = classes.try_emplace({topology.bytes_per_ms(lane), rings_of(lane)},
                                                     static_cast<sim::LaneId>(m.lanes.size()));
        if (added) m.lanes.push_back({topology.bytes_per_ms(lane), {}, {}});
        id = at->second;
      }
      if (kept_by.size() <= id) kept_by.resize(m.lanes.size(), 0);
      if (kept_by[id] != g + 1) {
        kept_by[id] = g + 1;
        kept.push_back({id, group.lane_uses[l]});
      }
    }
    group.lanes.clear();
    group.lane_uses.clear();
    for (const auto& [id, uses] : kept) {
      group.lanes.push_back(id);
      group.lane_uses.push_back(uses);
    }
  }
  for (const Impl::Lane& lane : m.lanes)
    m.model.lane_bytes_per_ms.push_back(lane.bytes_per_ms);
  m.share.resize(m.lanes.size(), 1.0f);
  for (const auto& list : m.setup.schedule.virtual_stage_actions()) {
    Impl::Work& work = m.work.emplace_back();
    for (const Action& a : list) {
      const int kind = a.op == Op::forward           ? 0
                       : a.op == Op::backward        ? 1
                       : a.op == Op::input_gradient  ? 2
                       : a.op == Op::weight_gradient ? 3
                                                     : -1;
      if (kind < 0) continue;
      work.actions[kind] += 1;
      work.samples[kind] += a.size;
      if (sends_gradient(a.op)) work.sends_gradients = true;
      if (!work.sends_gradients && kind == 0) work.warm_up_actions += 1, work.warm_up_samples += a.size;
    }
  }
  const std::vector<std::uint32_t>& sizes = m.setup.schedule.micro_batch_sizes;
  m.least_samples = sizes.empty() ? 0.0 : *std::min_element(sizes.begin(), sizes.end());
}

IterationModel::~IterationModel() = default;
IterationModel::IterationModel(IterationModel&&) noexcept = default;
IterationModel& IterationModel::operator=(IterationModel&&) noexcept = default;

double IterationModel::stage_speed(std::size_t stage) const { return impl_->device.at(stage)->speed; }
std::uint64_t IterationModel::stage_memory(std::size_t stage) const { return impl_->memory.at(stage); }
double IterationModel::cut_ms_per_byte(std::size_t cut) const { return impl_->cut_ms_per_byte.at(cut); }
double IterationModel::cut_latency_ms(std::size_t cut) const { return impl_->cut_latency_ms.at(cut); }

std::size_t IterationModel::simulated_actions() const {
  return actions_per_pipeline(impl_->brief.schedule) * impl_->representatives();
}

std::size_t IterationModel::simulated_so_far() const { return impl_->simulated; }

bool IterationModel::exact() const { return impl_->exact && impl_->brief.rest.empty(); }

std::size_t IterationModel::all_actions() const {
  return actions_per_pipeline(impl_->setup.schedule) * impl_->setup.devices.size();
}

void IterationModel::set_bound_lanes(BoundLanes bound_lanes) { impl_->setup.bound_lanes = bound_lanes; }
BoundLanes IterationModel::bound_lanes() const { return impl_->setup.bound_lanes; }

IterationModel IterationModel::in_pod() const {
  IterationSetup setup = impl_->setup;
  setup.whole_pod = true;
  setup.bound_lanes = BoundLanes::simulated;
  return IterationModel(*impl_->cluster, std::move(setup));
}

std::size_t IterationModel::most_simulated_actions() const {
  return actions_per_pipeline(impl_->setup.schedule) * impl_->representatives();
}

std::size_t IterationModel::simulated_pipelines() const { return impl_->representatives(); }

IterationModel IterationModel::in_full() const {
  IterationSetup setup = impl_->setup;
  setup.full_simulation_actions = std::max(setup.full_simulation_actions, all_actions());
  setup.simulated_micro_batches = 0;
  return IterationModel(*impl_->cluster, std::move(setup));
}

double IterationModel::sync_ms(std::size_t stage, double parameter_bytes) const {
  const sim::Group& group = impl_->model.groups.at(stage);
  return sim::ring_allreduce_ms(group, parameter_bytes) +
         sim::optimizer_step_ms(parameter_bytes, *impl_->device[stage], impl_->optimizer_factor);
}

void IterationModel::Impl::set_costs(const std::vector<StageFigures>& stages) {
  const std::size_t S = device.size();
  for (sim::Instance& instance : model.instances) {
    const std::size_t s = instance.stage;
    const StageFigures& f = stages.at(s);
    sim::set_stage_costs(instance, f, cluster->devices[instance.device], optimizer_factor);
    instance.send_bytes_per_sample = s + 1 < S ? f.output_bytes : 0;
    instance.grad_bytes_per_sample = s > 0 ? stages[s - 1].output_bytes : 0;
  }
}

double IterationModel::least_ms(const std::vector<StageFigures>& stages) {
  Impl& m = *impl_;
  m.set_costs(stages);
  const double overhead = m.model.action_overhead_ms;
  const double least = m.least_samples;
  // Each processor computes every action of its stages in turn, then, once its
  // stage's ring is done, steps: what it computes before the step, per processor.
  m.processor_work.assign(m.model.processors, 0.0);
  auto work_ms = [&](const sim::Instance& instance) { // every action of its stage
    const Impl::Work& w = m.work[instance.stage];
    double ms = (w.actions[0] + w.actions[1] + w.actions[2] + w.actions[3]) * overhead +
                w.actions[0] * instance.forward_fixed_ms + w.samples[0] * instance.forward_ms_per_sample;
    for (int kind = 1; kind < 4; ++kind) {
      const Op op = kind == 1 ? Op::backward : kind == 2 ? Op::input_gradient : Op::weight_gradient;
      ms += backward_share(op, instance.input_gradient_share) *
            (w.actions[kind] * instance.backward_fixed_ms + w.samples[kind] * instance.backward_ms_per_sample);
    }
    return ms;
  };
  bool split_backwards = false; // I and W: the last action need not send a gradient
  m.instance_work.resize(m.model.instances.size());
  for (std::size_t i = 0; i < m.model.instances.size(); ++i) {
    const sim::Instance& instance = m.model.instances[i];
    const Impl::Work& w = m.work[instance.stage];
    split_backwards = split_backwards || w.actions[2] > 0 || w.actions[3] > 0;
    m.instance_work[i] = work_ms(instance);
    m.processor_work[instance.processor] += m.instance_work[i];
  }
  auto sync_ms = [&](const sim::Instance& instance) {
    sim::Group& group = m.model.groups[instance.stage];
    group.bytes = static_cast<double>(stages[instance.stage].parameter_bytes);
    const double ring = group.ring > 1 && group.bytes > 0 ? sim::ring_allreduce_ms(group) : 0.0;
    return ring + instance.optimizer_ms;
  };
  auto send_ms = [&](const sim::Route& route, double bytes_per_sample) {
    return route.latency_ms + (std::isinf(route.bytes_per_ms) ? 0.0 : least * bytes_per_sample / route.bytes_per_ms);
  };
  if (m.setup.schedule.chunks > 1) {
    // A device's chunks take turns on its processor: all their computing, and each
    // chunk's step after it.
    double most = 0;
    for (const sim::Instance& instance : m.model.instances)
      most = std::max(most, m.processor_work[instance.processor] + instance.optimizer_ms);
    return most;
  }
  // One stage to a processor, pipeline-major. A stage's first forward waits for some
  // micro-batch's forwards and sends on every stage before it (`head`); where every
  // backward is whole, its last sends a gradient that every stage before it then
  // backwards in turn, the first stage's ring and step last (`tail`). A stage takes its
  // actions in order, and the first that sends a gradient back waits for a micro-batch
  // to go on from it through every stage after and its gradient to come back
  // (`round_trip`): its own actions end no sooner than its head, the longer of its
  // warm-up forwards and one forward and that round trip, and the rest of its actions.
  const std::size_t S = m.device.size();
  auto forward_ms = [&](const sim::Instance& instance) {
    return overhead + instance.forward_fixed_ms + least * instance.forward_ms_per_sample;
  };
  m.round_trip.resize(S);
  double most = 0;
  for (std::size_t first = 0; first < m.model.instances.size(); first += S) {
    const sim::Instance* pipeline = &m.model.instances[first];
    const double first_sync = sync_ms(pipeline[0]);
    double trip = 0; // from stage s's forward out to its gradient back
    for (std::size_t s = S; s-- > 0;) {
      m.round_trip[s] = trip;
      if (s == 0) break;
      const sim::Instance& instance = pipeline[s];
      // Its action that sends the gradient back: an I where it has any, else a B.
      const Impl::Work& w = m.work[instance.stage];
      const Op sends = w.actions[2] > 0 ? Op::input_gradient : Op::backward;
      const double gradient =
          w.sends_gradients ? overhead + backward_share(sends, instance.input_gradient_share) *
                                             (instance.backward_fixed_ms + least * instance.backward_ms_per_sample)
                            : 0.0;
      trip += send_ms(pipeline[s - 1].to_next, pipeline[s - 1].send_bytes_per_sample) + forward_ms(instance) +
              gradient + send_ms(instance.to_previous, instance.grad_bytes_per_sample);
    }
    double head = 0, tail = 0;
    for (std::size_t s = 0; s < S; ++s) {
      const sim::Instance& instance = pipeline[s];
      const Impl::Work& w = m.work[instance.stage];
      const double done = head + m.processor_work[instance.processor];
      most = std::max(most, done + sync_ms(instance));
      if (!split_backwards) most = std::max(most, done + tail + first_sync);
      if (w.sends_gradients && w.warm_up_actions > 0) {
        const double warm_up = w.warm_up_actions * (overhead + instance.forward_fixed_ms) +
                               w.warm_up_samples * instance.forward_ms_per_sample;
        const double ends =
            head + std::max(warm_up, forward_ms(instance) + m.round_trip[s]) + m.instance_work[first + s] - warm_up;
        most = std::max(most, ends + sync_ms(instance));
        if (!split_backwards) most = std::max(most, ends + tail + first_sync);
      }
      head += forward_ms(instance);
      if (s + 1 < S) head += send_ms(instance.to_next, instance.send_bytes_per_sample);
      tail += overhead + instance.backward_fixed_ms + least * instance.backward_ms_per_sample;
      if (s + 1 < S) tail += send_ms(pipeline[s + 1].to_previous, pipeline[s + 1].grad_bytes_per_sample);
    }
  }
  return most;
}

double IterationModel::iteration_ms(const std::vector<StageFigures>& stages) {
  Impl& m = *impl_;
  const std::size_t S = m.device.size();
  m.set_costs(stages);
  for (std::size_t s = 0; s < S; ++s)
    m.model.groups[s].bytes = static_cast<double>(stages[s].parameter_bytes);
  for (std::size_t l = 0; l < m.lanes.size(); ++l) {
    const Impl::Lane& lane = m.lanes[l];
    double own = 0, all = 0;
    for (std::size_t send : lane.own)
      own += stages[send / 2].output_bytes;
    for (const auto& [send, pipelines] : lane.load)
      all += pipelines * stages[send / 2].output_bytes;
    m.share[l] = own > 0 && all > own ? static_cast<float>(all / own) : 1.0f;
  }
  for (sim::Instance& instance : m.model.instances)
    for (sim::Route* route : {&instance.to_next, &instance.to_previous})
      for (std::uint8_t l = 0; l < route->count; ++l)
        route->share[l] = m.share[route->lanes[l]];
  // Where the lanes bind the steady state, transfers that each wait for all the lanes
  // they cross keep them busy for less than the whole period, and for less the longer
  // the pipelines run, which only the pipelines as they run show: every micro-batch is
  // simulated, where the setup asks for it, or twice the simulated ones, to extrapolate
  // from. So too where a stage's loop to the last stage and back, with what the lanes
  // carry per micro-batch on top, would outlast the busiest processor: the queues at
  // shared lanes then lengthen the loop, and the loop paces the pipeline (156 pipelines
  // of 64 stages on NICs of four GPUs each: 12% longer than the period priced).
  const Impl::Probe* chosen = &m.brief;
  if (m.setup.bound_lanes != BoundLanes::priced && !m.brief.rest.empty()) {
    if (lanes_bind(m.steady->period_of(m.model, m.brief.rest.front().first)))
      chosen = m.setup.bound_lanes == BoundLanes::extrapolated && !m.twice.rest.empty() ? &m.twice : &m.whole;
  }
  const Impl::Probe& probe = *chosen;
  // The other pipelines' sends on a shared lane also hold back the last pipeline in
  // line: it starts behind them and stays behind, as far as the longest such queue.
  const std::vector<std::uint32_t>& sizes = probe.schedule.micro_batch_sizes;
  const double largest = static_cast<double>(*std::max_element(sizes.begin(), sizes.end()));
  double behind = 0;
  for (sim::Instance& instance : m.model.instances) {
    for (const auto& [route, bytes] : {std::pair{&instance.to_next, instance.send_bytes_per_sample},
                                       std::pair{&instance.to_previous, instance.grad_bytes_per_sample}})
      for (std::uint8_t l = 0; l < route->count; ++l)
        behind = std::max(behind, (static_cast<double>(route->share[l]) - 1.0) * largest * bytes /
                                      m.lanes[route->lanes[l]].bytes_per_ms);
  }
  m.last_steady_ms = 0;
  auto simulated_ms = [&](const Impl::Probe& run) -> std::optional<double> {
    m.model.schedule = &run.schedule;
    m.simulated += actions_per_pipeline(run.schedule) * m.representatives();
    const sim::Outcome outcome = sim::run(m.model, 1);
    if (outcome.iteration_end_ms.empty()) return std::nullopt;
    return outcome.iteration_end_ms.front();
  };
  if (&probe == &m.twice) {
    // Each micro-batch past the first 2k adds what each of the second k added.
    const std::optional<double> first = simulated_ms(m.brief), both = simulated_ms(m.twice);
    if (!first || !both) return 0.0;
    const double each = (*both - *first) / static_cast<double>(m.brief.schedule.micro_batch_sizes.size());
    std::size_t past = 0;
    for (const auto& [size, count] : m.twice.rest)
      past += count;
    return *both + behind + static_cast<double>(past) * each;
  }
  const std::optional<double> end = simulated_ms(probe);
  if (!end) return 0.0;
  const double steady = probe.rest.empty() ? 0.0
                                           : m.steady->extra_ms(m.model, probe.schedule.micro_batch_sizes.size(),
                                                                m.setup.schedule.micro_batch_sizes.size(), probe.rest);
  m.last_steady_ms = steady;
  return *end + behind + steady;
}

double IterationModel::last_steady_ms() const { return impl_->last_steady_ms; }

double IterationModel::last_lanes_ms() {
  // The stages' figures of the last estimate are still the model's.
  if (impl_->last_steady_ms == 0) return 0;
  return impl_->steady->period_of(impl_->model, impl_->brief.rest.front().first).lanes;
}

bool IterationModel::last_lanes_bind() {
  if (impl_->last_steady_ms == 0) return false;
  return lanes_bind(impl_->steady->period_of(impl_->model, impl_->brief.rest.front().first));
}

std::size_t IterationModel::brief_micro_batches() const { return impl_->brief.schedule.micro_batch_sizes.size(); }

} // namespace actorpipe
