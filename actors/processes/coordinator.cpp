/// The coordinator's gate and the joining of a run's workers.

#include "processes/coordinator.hpp"

#include "processes/control_channel.hpp"

#include "launch/job_token.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <optional>
#include <set>

namespace actorpipe::actors {

namespace {

struct GateState {
  GateConfig config;
  std::vector<bool> taken; ///< by rank − 1
  /// The admitted workers not yet ready, by the actor that asked to join (which lives
  /// as long as its worker): its rank and its "HOST pid P".
  std::map<caf::actor_addr, std::pair<std::uint64_t, std::string>> joining;
  static inline const char* name = "gate";
};

using Gate = gate_actor::stateful_pointer<GateState>;

gate_actor::behavior_type gate_behavior(Gate self, GateConfig config) {
  self->state.config = std::move(config);
  self->state.taken.assign(self->state.config.workers, false);
  const auto log = [self](const std::string& line) {
    if (self->state.config.log) self->state.config.log(line);
  };
  // A worker that ends between its order and its readiness (it refused the plan, or
  // was killed) is named at once: the others would wait for it until a timeout.
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    const auto it = st.joining.find(down.source);
    if (it == st.joining.end()) return;
    const auto [rank, host] = it->second;
    st.joining.erase(it);
    if (st.config.on_lost)
      st.config.on_lost("worker process " + std::to_string(rank) + " (" + host +
                        ") ended before the run began (its messages say why)");
  });
  return {
      [=](join_atom, const std::string& token, const std::string& host_name,
          std::uint32_t pid) -> caf::result<JobOrder> {
        auto& st = self->state;
        const std::string host = host_name + " pid " + std::to_string(pid);
        if (!launch::same_token(token, st.config.token)) {
          // Where it came from, as the middleman knows it (asked before the promise
          // takes the sender over).
          const caf::node_id node = self->current_sender() ? self->current_sender()->node() : caf::node_id{};
          auto refused =
              std::make_shared<caf::typed_response_promise<JobOrder>>(self->make_response_promise<JobOrder>());
          const auto refuse = [=](const std::string& from) {
            log("refused a worker from " + from + " (" + host + "): wrong token");
            refused->deliver(caf::make_error(caf::sec::request_receiver_down, "wrong token"));
          };
          self->request(self->system().middleman().actor_handle(), std::chrono::seconds(5), caf::get_atom::value, node)
              .then([=](const caf::node_id&, const std::string& address,
                        std::uint16_t port) { refuse(address + ":" + std::to_string(port)); },
                    [=](caf::error&) { refuse("an unknown address"); });
          return *refused;
        }
        if (std::find(st.taken.begin(), st.taken.end(), false) == st.taken.end())
          return caf::make_error(caf::sec::runtime_error,
                                 "the run has all its " + std::to_string(st.config.workers) + " workers");
        const auto wanted = [&](std::size_t r) { return r < st.config.hosts.size() ? st.config.hosts[r] : ""; };
        std::optional<std::size_t> place;
        for (const bool exact : {true, false})
          for (std::size_t r = 0; r < st.taken.size() && !place; ++r)
            if (!st.taken[r] && wanted(r) == (exact ? host_name : "")) place = r;
        if (!place) {
          std::set<std::string> free;
          for (std::size_t r = 0; r < st.taken.size(); ++r)
            if (!st.taken[r]) free.insert(wanted(r));
          std::string names;
          for (const std::string& name : free)
            names += (names.empty() ? "" : ", ") + name;
          log("refused a worker on " + host + ": the cluster file puts no free worker place on that machine");
          return caf::make_error(caf::sec::runtime_error, "the cluster file puts no free worker place on host '" +
                                                              host_name + "' (the free ones are on " + names + ")");
        }
        st.taken[*place] = true;
        JobOrder order = st.config.order;
        order.rank = *place + 1;
        if (const caf::strong_actor_ptr& sender = self->current_sender()) {
          st.joining[caf::actor_cast<caf::actor_addr>(sender)] = {order.rank, host};
          self->monitor(sender);
        }
        return order;
      },
      [=](ready_atom, std::uint64_t rank, stage_host_actor host) {
        auto& st = self->state;
        std::erase_if(st.joining, [&](const auto& entry) { return entry.second.first == rank; });
        if (st.config.on_ready) st.config.on_ready(rank, std::move(host));
      },
  };
}

/// What coordinate() waits for, filled by the gate and by rank 0's join: the hosts of
/// the workers ready so far, the join's end, and a worker lost on the way.
struct Arrivals {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::uint64_t, stage_host_actor> hosts;
  std::optional<Status> joined;
  std::optional<std::string> lost;
};

} // namespace

gate_actor spawn_gate(caf::actor_system& system, GateConfig config) {
  return system.spawn(gate_behavior, std::move(config));
}

Coordination::~Coordination() {
  for (auto& [rank, host] : hosts)
    caf::anon_send_exit(host, caf::exit_reason::user_shutdown);
  if (gate) caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
}

Result<std::unique_ptr<Coordination>> coordinate(caf::actor_system& system, const CoordinateOptions& options,
                                                 JobOrder order, std::vector<std::string> hosts) {
  auto coordination = std::make_unique<Coordination>();
  transport::TransportOptions tensors;
  tensors.store = {options.listen.host, 0};
  tensors.key_prefix = launch::store_prefix(options.token);
  tensors.host = options.listen.host;
  tensors.rank = 0;
  tensors.world = options.workers + 1;
  // It hosts no stages, but its local workers' stage threads share its machine: one a
  // stage of the placement ([pipeline][stage]).
  tensors.compute_threads = 0;
  for (const auto& pipeline : order.placement)
    tensors.compute_threads += pipeline.size();
  auto opened = transport::TensorTransport::open(tensors);
  ACTORPIPE_TRY(opened);
  coordination->transport = std::move(*opened);
  order.store_host = options.listen.host;
  order.store_port = coordination->transport->store_port();
  order.world = options.workers + 1;

  auto arrivals = std::make_shared<Arrivals>();
  GateConfig gate;
  gate.token = options.token;
  gate.order = std::move(order);
  gate.workers = options.workers;
  gate.hosts = std::move(hosts);
  gate.log = options.log;
  gate.on_ready = [arrivals](std::uint64_t rank, stage_host_actor host) {
    std::lock_guard<std::mutex> lock(arrivals->mutex);
    arrivals->hosts[rank] = std::move(host);
    arrivals->changed.notify_all();
  };
  gate.on_lost = [arrivals](const std::string& what) {
    std::lock_guard<std::mutex> lock(arrivals->mutex);
    if (!arrivals->lost) arrivals->lost = what;
    arrivals->changed.notify_all();
  };
  coordination->gate = spawn_gate(system, std::move(gate));
  auto port = publish_gate(system, coordination->gate, options.listen, options.tls);
  if (!port)
    return Error::run_failed("cannot listen for workers on " + options.listen.text() + ": " +
                             system.render(port.error()));
  if (options.on_listening) options.on_listening({options.listen.host, *port});
  // Every worker joins the tensor transport once it has its order; so does rank 0, on a
  // thread of its own, so that a worker lost before it joins ends the wait at once.
  std::thread([arrivals, transport = coordination->transport.get()] {
    Status joined = transport->join();
    std::lock_guard<std::mutex> lock(arrivals->mutex);
    arrivals->joined = std::move(joined);
    arrivals->changed.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(arrivals->mutex);
  arrivals->changed.wait(lock, [&] { return arrivals->joined || arrivals->lost; });
  if (!arrivals->joined) {
    // The join waits in c10d for the lost rank until its timeout: the transport stays
    // with it, and goes with the process.
    (void)coordination->transport.release();
    return Error::run_failed(*arrivals->lost);
  }
  ACTORPIPE_TRY(*arrivals->joined);
  const bool ready = arrivals->changed.wait_for(
      lock, options.join_timeout, [&] { return arrivals->hosts.size() == options.workers || arrivals->lost; });
  if (arrivals->lost) return Error::run_failed(*arrivals->lost);
  if (!ready)
    return Error::run_failed(std::to_string(arrivals->hosts.size()) + " of " + std::to_string(options.workers) +
                             " workers were ready within " + std::to_string(options.join_timeout.count()) + " s");
  coordination->hosts = arrivals->hosts;
  return coordination;
}

} // namespace actorpipe::actors
