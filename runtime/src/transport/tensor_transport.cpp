#include "transport/tensor_transport.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"
#include "train/tensor_box.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>

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
  /// Gloo's context over the members, met through the job's store as c10d's Gloo
  /// process group meets. Its collectives run on the thread that calls them: the
  /// process group hands each to a worker thread of its own and back, and on cores the
  /// stages keep busy those hand-offs cost more than the collective's own work (a
  /// stage's all-reduce under `launch --nprocs 2` took 1.2 core-ms a step in Gloo's
  /// threads through the process group, 0.5 without: docs/running.md).
  std::shared_ptr<::gloo::rendezvous::Context> context;
  std::uint32_t next_tag = 0; ///< the same on every member: they call in the same order
  std::mutex calling;         ///< one collective at a time, as every member must call them in order
  std::string name;
  /// The flat buffer of its all-reduces over tensors apart, by element type, kept from
  /// one to the next: a fresh one each time paid for its pages again, a large part of a
  /// large all-reduce's time (bench/transport_bench). A group's collectives run one at
  /// a time, as every member must call them in order.
  std::map<c10::ScalarType, at::Tensor> flat;
  /// The last collective's options, kept until the next: they own the unbound buffers
  /// over its tensor, and destroying one waits, yielding, until Gloo's loop has let go
  /// of it. Right after the collective the loop usually still holds it, preempted as it
  /// woke the caller, and on cores the stages keep busy it ran late: each stage thread
  /// yielded some 4,000 times a second under `launch --nprocs 2`, against 170 with the
  /// options kept (docs/running.md, Collectives on the caller's thread).
  std::unique_ptr<::gloo::AllreduceOptions> last_sum;
  std::unique_ptr<::gloo::BroadcastOptions> last_broadcast;
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

template <typename T> void sum_into_as(::gloo::AllreduceOptions& sum, at::Tensor& tensor) {
  sum.setOutput<T>(static_cast<T*>(tensor.data_ptr()), static_cast<std::size_t>(tensor.numel()));
  sum.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&::gloo::sum<T>));
}

/// Sets `sum` to add up `tensor` (contiguous) in place, by its element type, as c10d's
/// Gloo process group does for the types it sums.
void sum_into(::gloo::AllreduceOptions& sum, at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
  case at::kFloat: return sum_into_as<float>(sum, tensor);
  case at::kDouble: return sum_into_as<double>(sum, tensor);
  case at::kHalf: return sum_into_as<::gloo::float16>(sum, tensor);
  case at::kLong: return sum_into_as<std::int64_t>(sum, tensor);
  case at::kInt: return sum_into_as<std::int32_t>(sum, tensor);
  case at::kChar: return sum_into_as<std::int8_t>(sum, tensor);
  case at::kByte: return sum_into_as<std::uint8_t>(sum, tensor);
  default: throw std::runtime_error(std::string("cannot sum tensors of type ") + c10::toString(tensor.scalar_type()));
  }
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
  torch::Tensor tensor = payload->tensor.contiguous();
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
    state_->in_flight.push_back(state_->world->send(tensors, static_cast<int>(to), static_cast<int>(ticket.tag)));
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
    arrival->work = state_->world->recv(arrival->tensors, static_cast<int>(ticket.from), static_cast<int>(ticket.tag));
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
    c10d::ProcessGroupGloo::GlooStore meeting(c10::make_intrusive<c10d::PrefixStore>("group/" + name, store));
    group->context = std::make_shared<::gloo::rendezvous::Context>(mine, static_cast<int>(ranks.size()));
    group->context->setTimeout(options_.timeout);
    group->context->connectFullMesh(meeting, state_->device);
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
  std::lock_guard<std::mutex> lock(group.calling); // its flat buffer too
  as_flat(group, tensors, [&](at::Tensor& flat) {
    try {
      auto sum = std::make_unique<::gloo::AllreduceOptions>(group.context);
      sum_into(*sum, flat);
      sum->setTag(group.next_tag++);
      sum->setTimeout(options_.timeout);
      // A group of 2^k members halves and doubles: k exchanges each way, not the ring's
      // 2(n − 1) segments, for the same bytes. Each segment the caller waits for is a
      // wake-up of Gloo's loop and of the caller, which on cores the stages keep busy
      // cost more than the ring's overlap of sums with transfers saves
      // (docs/running.md, Collectives on the caller's thread).
      const auto members = static_cast<unsigned>(group.context->size);
      if ((members & (members - 1)) == 0) sum->setAlgorithm(::gloo::AllreduceOptions::Algorithm::BCUBE);
      ::gloo::allreduce(*sum);
      group.last_sum = std::move(sum);
    } catch (const std::exception& e) {
      throw std::runtime_error("all-reduce in group '" + group.name + "': " + text::message_of(e));
    }
  });
}

void TensorTransport::broadcast(Group& group, std::size_t root, const std::vector<train::Payload>& tensors) {
  if (tensors.empty()) return;
  if (root >= static_cast<std::size_t>(group.context->size))
    throw std::logic_error("group '" + group.name + "' has no member " + std::to_string(root) + " to broadcast from");
  std::lock_guard<std::mutex> lock(group.calling);
  as_flat(group, tensors, [&](at::Tensor& flat) {
    try {
      // Bytes: the root's are the others', whatever their type.
      auto copy = std::make_unique<::gloo::BroadcastOptions>(group.context);
      copy->setOutput(static_cast<std::uint8_t*>(flat.data_ptr()), static_cast<std::size_t>(flat.nbytes()));
      copy->setRoot(static_cast<int>(root));
      copy->setTag(group.next_tag++);
      copy->setTimeout(options_.timeout);
      ::gloo::broadcast(*copy);
      group.last_broadcast = std::move(copy);
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
  at::Tensor& kept = group.flat[tensors.front()->tensor.scalar_type()];
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
