#include "transport/tensor_transport.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"
#include "train/tensor_box.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <sched.h>

namespace actorpipe::transport {

struct TensorTransport::Group {
  /// c10d's Gloo process group over the members, met through the job's store. Its
  /// collectives run on the process group's own worker thread; the caller waits.
  c10::intrusive_ptr<c10d::Backend> gloo;
  std::uint32_t size = 0;
  std::mutex calling; ///< one collective at a time, as every member must call them in order
  std::string name;
  /// The flat buffer of its all-reduces over tensors apart, by element type and device,
  /// kept from one to the next: a fresh one each time paid for its pages again, a large
  /// part of a large all-reduce's time (bench/transport_bench).
  std::map<std::string, at::Tensor> flat; ///< by "TYPE DEVICE"
};

struct TensorTransport::Arrival {
  c10::intrusive_ptr<c10d::Work> work;
  std::vector<at::Tensor> tensors; ///< the one tensor the bytes land in
  std::uint32_t from = 0;
};

struct TensorTransport::State {
  /// Receives posted and not yet taken. First, so that their buffers outlive the
  /// process groups that may still write into them.
  std::map<const Arrival*, std::shared_ptr<Arrival>> posted;
  bool loop_yields = false; ///< Gloo's loop runs under SCHED_IDLE
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> world;
  std::shared_ptr<::gloo::transport::Device> device;
  /// Posting is serialised (stage threads send and receive at once); waiting is not.
  std::mutex post;
  std::map<std::size_t, std::uint32_t> next_tag; ///< by destination
  /// Sends in flight, oldest first; each keeps its tensor until its bytes are gone.
  std::deque<c10::intrusive_ptr<c10d::Work>> in_flight;
};

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>
gloo_options(const TransportOptions& options, const std::shared_ptr<::gloo::transport::Device>& device) {
  auto gloo = c10d::ProcessGroupGloo::Options::create();
  gloo->devices.push_back(device);
  gloo->timeout = options.timeout;
  gloo->threads = 1;
  return gloo;
}

/// `post`'s work, enqueued one at a time in the process. c10d's process groups record
/// what they enqueue in one recorder for the process, which two enqueuing at once
/// corrupt (LibTorch 2.11: a crash where the transport test's ranks, threads of one
/// process, all-reduced in groups at once), so every send, receive and collective of
/// every transport enqueues alone; their waits overlap.
c10::intrusive_ptr<c10d::Work> enqueued(const std::function<c10::intrusive_ptr<c10d::Work>()>& post) {
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> lock(one_at_a_time);
  return post();
}

std::string store_text(const TransportOptions& options) { return "the tensor store at " + options.store.text(); }

} // namespace

TensorTransport::TensorTransport(TransportOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

TensorTransport::~TensorTransport() {
  try {
    flush();
  } catch (const std::exception&) {
    // A peer that went away takes its unsent bytes with it.
  }
}

Result<std::unique_ptr<TensorTransport>> TensorTransport::open(const TransportOptions& options) {
  if (options.world == 0 || options.rank >= options.world)
    return Error::bad_input("rank " + std::to_string(options.rank) + " is not one of " + std::to_string(options.world) +
                            " processes");
  std::unique_ptr<TensorTransport> transport(new TensorTransport(options));
  try {
    c10d::TCPStoreOptions store;
    store.port = options.store.port;
    store.isServer = options.rank == 0;
    store.numWorkers = options.world;
    store.waitWorkers = false;
    store.timeout = options.timeout;
    transport->state_->store = c10::make_intrusive<c10d::TCPStore>(options.store.host, store);
  } catch (const std::exception& e) {
    return Error::run_failed(store_text(options) + ": " + (options.rank == 0 ? "cannot listen: " : "cannot connect: ") +
                             text::message_of(e));
  }
  return transport;
}

Status TensorTransport::join() {
  try {
    // The loop thread starts with the device and takes its scheduling from the thread
    // that makes it.
    std::exception_ptr failed;
    std::thread([&] {
      if (!options_.follows_others && options_.compute_threads >= train::usable_cores().size()) {
        const sched_param idle{};
        state_->loop_yields = ::sched_setscheduler(0, SCHED_IDLE, &idle) == 0; // refused: it runs as any thread
      }
      try {
        state_->device = c10d::ProcessGroupGloo::createDeviceForHostname(options_.host);
      } catch (...) {
        failed = std::current_exception();
      }
    }).join();
    if (failed) std::rethrow_exception(failed);
    state_->world = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("world", state_->store), static_cast<int>(options_.rank),
        static_cast<int>(options_.world), gloo_options(options_, state_->device));
  } catch (const std::exception& e) {
    return Error::run_failed(store_text(options_) + ": rank " + std::to_string(options_.rank) +
                             " could not join the others: " + text::message_of(e));
  }
  return Ok{};
}

std::uint16_t TensorTransport::store_port() const { return state_->store->getPort(); }

bool TensorTransport::loop_yields() const { return state_->loop_yields; }

TensorTicket TensorTransport::send(const train::Payload& payload, std::size_t to) {
  // Gloo sends host memory: a tensor on a GPU goes through the host, once the work on
  // its producer's stream that wrote it is done.
  if (payload->ready) payload->ready->synchronize();
  torch::Tensor tensor = payload->tensor.is_cuda() ? payload->tensor.cpu() : payload->tensor.contiguous();
  TensorTicket ticket;
  ticket.from = static_cast<std::uint32_t>(options_.rank);
  ticket.dtype = static_cast<std::int8_t>(tensor.scalar_type());
  ticket.shape = tensor.sizes().vec();
  std::vector<at::Tensor> tensors{tensor};
  std::lock_guard<std::mutex> lock(state_->post);
  // Tags stay below 2^31: c10d takes them as int.
  std::uint32_t& next = state_->next_tag[to];
  ticket.tag = next;
  next = (next + 1) & 0x7FFFFFFFu;
  try {
    state_->in_flight.push_back(
        enqueued([&] { return state_->world->send(tensors, static_cast<int>(to), static_cast<int>(ticket.tag)); }));
  } catch (const std::exception& e) {
    throw std::runtime_error("sending a tensor to rank " + std::to_string(to) + ": " + text::message_of(e));
  }
  while (!state_->in_flight.empty() && state_->in_flight.front()->isCompleted()) {
    state_->in_flight.front()->wait(); // rethrows a failed send's error
    state_->in_flight.pop_front();
  }
  return ticket;
}

train::Payload TensorTransport::receive(const TensorTicket& ticket) { return take(*post_receive(ticket)); }

std::shared_ptr<TensorTransport::Arrival> TensorTransport::post_receive(const TensorTicket& ticket) {
  auto arrival = std::make_shared<Arrival>();
  arrival->from = ticket.from;
  arrival->tensors.push_back(
      torch::empty(ticket.shape, torch::TensorOptions().dtype(static_cast<c10::ScalarType>(ticket.dtype))));
  std::lock_guard<std::mutex> lock(state_->post);
  try {
    arrival->work = enqueued([&] {
      return state_->world->recv(arrival->tensors, static_cast<int>(ticket.from), static_cast<int>(ticket.tag));
    });
  } catch (const std::exception& e) {
    throw std::runtime_error("receiving a tensor from rank " + std::to_string(ticket.from) + ": " +
                             text::message_of(e));
  }
  state_->posted.emplace(arrival.get(), arrival);
  return arrival;
}

bool TensorTransport::landed(Arrival& arrival) { return arrival.work->isCompleted(); }

train::Payload TensorTransport::take(Arrival& arrival) {
  try {
    arrival.work->wait(options_.timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("receiving a tensor from rank " + std::to_string(arrival.from) + ": " +
                             text::message_of(e));
  }
  {
    std::lock_guard<std::mutex> lock(state_->post);
    state_->posted.erase(&arrival);
  }
  return train::wrap(arrival.tensors.front());
}

std::shared_ptr<TensorTransport::Group> TensorTransport::group(const std::string& name,
                                                               const std::vector<std::size_t>& ranks) {
  auto group = std::make_shared<Group>();
  group->name = name;
  int mine = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == options_.rank) mine = static_cast<int>(i);
  if (mine < 0)
    throw std::logic_error("rank " + std::to_string(options_.rank) + " makes group '" + name +
                           "' without being a member");
  try {
    // A store client of the group's own: its members meet by waiting in the store, and
    // a client's wait holds the client, so a group made at the same time on another
    // thread (another stage's) could not post its own address through a shared one.
    c10d::TCPStoreOptions client;
    client.port = state_->store->getPort();
    client.isServer = false;
    client.waitWorkers = false;
    client.timeout = options_.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(options_.store.host, client);
    group->size = static_cast<std::uint32_t>(ranks.size());
    group->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("group/" + name, store), mine, static_cast<int>(ranks.size()),
        gloo_options(options_, state_->device));
  } catch (const std::exception& e) {
    throw std::runtime_error("group '" + name + "': " + text::message_of(e));
  }
  return group;
}

train::Payload TensorTransport::as_one_buffer(const std::vector<train::Payload>& tensors) {
  if (tensors.empty()) return nullptr;
  const at::Tensor& first = tensors.front()->tensor;
  std::int64_t next = first.storage_offset();
  for (const auto& payload : tensors) {
    const at::Tensor& t = payload->tensor;
    if (!t.is_contiguous() || t.scalar_type() != first.scalar_type() || !t.storage().is_alias_of(first.storage()) ||
        t.storage_offset() != next)
      return nullptr;
    next += t.numel();
  }
  return train::wrap(first.as_strided({next - first.storage_offset()}, {1}, first.storage_offset()));
}

namespace {

/// Runs `collective` on `tensors` as one flat 1-D tensor: where they already lie one
/// after the other in one buffer (a stage's gradient buckets), or a lone one, that;
/// else `group`'s buffer for their element type, copied into before and out of after.
/// One collective over one buffer, however many tensors (a stage's parameters): Gloo
/// pays its latency per collective, which costs more than the copies (measured in
/// bench/transport_bench). The caller holds the group's lock.
void as_flat(TensorTransport::Group& group, const std::vector<train::Payload>& tensors,
             const std::function<void(at::Tensor&)>& collective);

} // namespace

void TensorTransport::all_reduce_sum(Group& group, const std::vector<train::Payload>& tensors) {
  if (tensors.empty()) return;
  switch (const c10::ScalarType type = tensors.front()->tensor.scalar_type()) {
  case at::kFloat:
  case at::kDouble:
  case at::kHalf:
  case at::kBFloat16:
  case at::kLong:
  case at::kInt:
  case at::kChar:
  case at::kByte: break;
  default:
    throw std::runtime_error("all-reduce in group '" + group.name + "': cannot sum tensors of type " +
                             c10::toString(type));
  }
  std::lock_guard<std::mutex> lock(group.calling); // its flat buffer too
  as_flat(group, tensors, [&](at::Tensor& flat) {
    try {
      std::vector<at::Tensor> one{flat};
      c10d::AllreduceOptions sum;
      sum.reduceOp = c10d::ReduceOp::SUM;
      sum.timeout = options_.timeout;
      enqueued([&] { return group.gloo->allreduce(one, sum); })->wait(options_.timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error("all-reduce in group '" + group.name + "': " + text::message_of(e));
    }
  });
}

void TensorTransport::broadcast(Group& group, std::size_t root, const std::vector<train::Payload>& tensors) {
  if (tensors.empty()) return;
  if (root >= group.size)
    throw std::logic_error("group '" + group.name + "' has no member " + std::to_string(root) + " to broadcast from");
  std::lock_guard<std::mutex> lock(group.calling);
  as_flat(group, tensors, [&](at::Tensor& flat) {
    try {
      std::vector<at::Tensor> one{flat};
      c10d::BroadcastOptions copy;
      copy.rootRank = static_cast<int64_t>(root);
      copy.timeout = options_.timeout;
      enqueued([&] { return group.gloo->broadcast(one, copy); })->wait(options_.timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error("broadcast in group '" + group.name + "': " + text::message_of(e));
    }
  });
}

namespace {

void as_flat(TensorTransport::Group& group, const std::vector<train::Payload>& tensors,
             const std::function<void(at::Tensor&)>& collective) {
  const train::Payload whole = TensorTransport::as_one_buffer(tensors);
  if (whole) {
    at::Tensor flat = whole->tensor;
    collective(flat);
    return;
  }
  std::int64_t total = 0;
  for (const auto& payload : tensors)
    total += payload->tensor.numel();
  const at::Tensor& first = tensors.front()->tensor;
  at::Tensor& kept = group.flat[std::string(c10::toString(first.scalar_type())) + " " + first.device().str()];
  if (!kept.defined() || kept.numel() < total) kept = torch::empty({total}, tensors.front()->tensor.options());
  at::Tensor flat = kept.narrow(0, 0, total);
  torch::NoGradGuard no_grad;
  std::int64_t at = 0;
  for (const auto& payload : tensors) {
    const at::Tensor& from = payload->tensor;
    flat.narrow(0, at, from.numel()).view_as(from).copy_(from);
    at += from.numel();
  }
  collective(flat);
  at = 0;
  for (const auto& payload : tensors) {
    torch::Tensor target = payload->tensor;
    target.copy_(flat.narrow(0, at, target.numel()).view_as(target));
    at += target.numel();
  }
}

} // namespace

void TensorTransport::flush() {
  std::deque<c10::intrusive_ptr<c10d::Work>> in_flight;
  {
    std::lock_guard<std::mutex> lock(state_->post);
    in_flight.swap(state_->in_flight);
  }
  for (auto& work : in_flight)
    work->wait(options_.timeout);
}

void TensorTransport::abandon() {
  std::lock_guard<std::mutex> lock(state_->post);
  state_->in_flight.clear(); // gloo lets go of a send whose buffer is gone
}

} // namespace actorpipe::transport
