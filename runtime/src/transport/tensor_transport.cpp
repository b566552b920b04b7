#include "transport/tensor_transport.hpp"

#include "base/text.hpp"
#include "train/cores.hpp"
#include "train/tensor_box.hpp"
#include "transport/nccl_groups.hpp"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

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

struct TensorTransport::Arrival {
  c10::intrusive_ptr<c10d::Work> work;
  std::vector<at::Tensor> tensors; ///< the one tensor the bytes land in
  std::uint32_t from = 0;
  bool on_gpu = false; ///< over a GPU link: done on the GPU, not yet on the host
};

namespace {

/// One direction of a GPU link open for NCCL: a process group of its two ends.
struct OpenLink {
  c10::intrusive_ptr<c10d::Backend> nccl;
  int peer = 0;                  ///< the other end's rank in it
  c10::Device device{c10::kCPU}; ///< this end's GPU
};

/// Ends an NCCL process group's communicators and its watchdog, as c10d asks before it
/// is destroyed.
void shut_down(const c10::intrusive_ptr<c10d::Backend>& nccl) {
  if (!nccl) return;
  try {
    nccl->shutdown();
  } catch (const std::exception&) {
    // A peer already gone: its communicator ends with the process.
  }
}

/// A send not yet delivered; its work keeps its tensor.
struct InFlight {
  c10::intrusive_ptr<c10d::Work> work;
  std::optional<c10::Device> gpu; ///< where NCCL sends it from
};

/// The stream `device`'s work is queued on in the calling thread.
c10::Stream current_stream(c10::Device device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

/// Waits on the host until a GPU work is done: its wait() only orders the current
/// stream after it.
void finish_on_host(c10d::Work& work, c10::Device device, std::chrono::milliseconds timeout) {
  const c10::DeviceGuard on(device);
  work.wait(timeout);
  current_stream(device).synchronize();
}

} // namespace

struct TensorTransport::Group {
  /// c10d's Gloo process group over the members, met through the job's store. Its
  /// collectives run on the process group's own worker thread; the caller waits.
  c10::intrusive_ptr<c10d::Backend> gloo;
  /// c10d's NCCL process group over them, where each holds its tensors on a GPU of its
  /// own (`device`): for tensors on GPUs. Null otherwise.
  c10::intrusive_ptr<c10d::Backend> nccl;
  c10::Device device{c10::kCPU};
  ~Group() { shut_down(nccl); }
  std::uint32_t size = 0;
  std::mutex calling; ///< one collective at a time, as every member must call them in order
  std::string name;
  /// The flat buffer of its all-reduces over tensors apart, by element type and device,
  /// kept from one to the next: a fresh one each time paid for its pages again, a large
  /// part of a large all-reduce's time (bench/transport_bench).
  std::map<std::string, at::Tensor> flat; ///< by "TYPE DEVICE"
};

struct TensorTransport::State {
  /// Receives posted and not yet taken. First, so that their buffers outlive the
  /// process groups that may still write into them.
  std::map<const Arrival*, std::shared_ptr<Arrival>> posted;
  bool loop_yields = false; ///< Gloo's loop runs under SCHED_IDLE
  c10::intrusive_ptr<c10d::TCPStore> tcp_store;
  c10::intrusive_ptr<c10d::Store> store; ///< tcp_store under the job's key prefix
  c10::intrusive_ptr<c10d::ProcessGroupGloo> world;
  std::shared_ptr<::gloo::transport::Device> device;
  /// Posting is serialised (stage threads send and receive at once); waiting is not.
  std::mutex post;
  std::map<std::size_t, std::uint32_t> next_tag; ///< by destination
  /// Sends in flight, oldest first; each keeps its tensor until its bytes are gone.
  std::deque<InFlight> in_flight;
  /// GPU links this rank opened for NCCL, by id; fixed once open_gpu_links() returns.
  std::map<std::uint32_t, OpenLink> links;
  ~State() {
    for (auto& [id, link] : links)
      shut_down(link.nccl);
  }
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

/// Where rank `rank` publishes its GPU `gpu`'s UUID, and how many GPUs it sees (after
/// their UUIDs: a rank that reads the count finds them).
std::string uuid_key(std::size_t rank, int gpu) {
  return "gpu-uuid/" + std::to_string(rank) + "/" + std::to_string(gpu);
}
std::string gpu_count_key(std::size_t rank) { return "gpu-count/" + std::to_string(rank); }

std::vector<std::uint8_t> as_bytes(const std::string& text) { return {text.begin(), text.end()}; }

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
    // c10d's store on its own listens on every interface; the job's listens only where
    // its control plane does, on a socket made here for it to take over.
    if (store.isServer) {
      auto listening = launch::listen_on(options.store);
      if (!listening) throw std::runtime_error(listening.error().message);
      store.masterListenFd = *listening;
    }
    store.numWorkers = options.world;
    store.waitWorkers = false;
    store.timeout = options.timeout;
    transport->state_->tcp_store = c10::make_intrusive<c10d::TCPStore>(options.store.host, store);
    transport->state_->store = c10::make_intrusive<c10d::PrefixStore>(options.key_prefix, transport->state_->tcp_store);
  } catch (const std::exception& e) {
    // Where rank 0 cannot listen, the address it was given is at fault (--listen).
    if (options.rank == 0) return Error::bad_input(store_text(options) + ": cannot listen: " + text::message_of(e));
    return Error::run_failed(store_text(options) + ": cannot connect: " + text::message_of(e));
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
    // Before any link or group asks a peer for its GPUs, and a rank's asks wait for them.
    const int gpus = nccl::visible_gpus();
    for (int gpu = 0; gpu < gpus; ++gpu)
      state_->store->set(uuid_key(options_.rank, gpu), as_bytes(nccl::gpu_uuid(gpu)));
    state_->store->set(gpu_count_key(options_.rank), as_bytes(std::to_string(gpus)));
  } catch (const std::exception& e) {
    return Error::run_failed(store_text(options_) + ": rank " + std::to_string(options_.rank) +
                             " could not join the others: " + text::message_of(e));
  }
  return Ok{};
}

std::uint16_t TensorTransport::store_port() const { return state_->tcp_store->getPort(); }

std::uint32_t TensorTransport::link_id(std::size_t pipeline, std::size_t stages, std::size_t from_stage,
                                       std::size_t to_stage) {
  const std::size_t boundary = pipeline * stages + std::min(from_stage, to_stage);
  return static_cast<std::uint32_t>(1 + 2 * boundary + (from_stage < to_stage ? 0 : 1));
}

namespace {

/// Rank `rank`'s GPU `gpu`'s UUID, once it has published them (as it joins); empty
/// where it has no such GPU.
std::string uuid_of(c10d::Store& store, std::size_t rank, int gpu) {
  const std::vector<std::uint8_t> count = store.get(gpu_count_key(rank));
  if (gpu < 0 || gpu >= std::stoi(std::string(count.begin(), count.end()))) return {};
  const std::vector<std::uint8_t> bytes = store.get(uuid_key(rank, gpu));
  return {bytes.begin(), bytes.end()};
}

/// Whether `uuids` (of a group's members' GPUs, or a link's ends') are all known and
/// differ: NCCL puts one rank on a GPU.
bool distinct_gpus(std::vector<std::string> uuids) {
  if (std::find(uuids.begin(), uuids.end(), std::string()) != uuids.end()) return false;
  std::sort(uuids.begin(), uuids.end());
  return std::adjacent_find(uuids.begin(), uuids.end()) == uuids.end();
}

} // namespace

Result<std::size_t> TensorTransport::open_gpu_links(const std::vector<GpuLink>& links) {
  std::size_t opened = 0;
  const int visible = nccl::visible_gpus();
  for (const GpuLink& link : links) {
    const bool sender = link.from == options_.rank, receiver = link.to == options_.rank;
    if (sender == receiver) continue; // not an end of it, or both: nothing crosses processes
    const int mine = sender ? link.from_cuda : link.to_cuda, theirs = sender ? link.to_cuda : link.from_cuda;
    const std::size_t peer = sender ? link.to : link.from;
    // A stage on a GPU this process lacks was refused before the run; both ends decide
    // from the same published UUIDs, so they agree on Gloo where they share a GPU.
    if (mine < 0 || mine >= visible) continue;
    const std::string what = "GPU link " + std::to_string(link.id) + " from rank " + std::to_string(link.from) +
                             " (cuda:" + std::to_string(link.from_cuda) + ") to rank " + std::to_string(link.to) +
                             " (cuda:" + std::to_string(link.to_cuda) + ")";
    try {
      if (!distinct_gpus({nccl::gpu_uuid(mine), uuid_of(*state_->store, peer, theirs)})) continue;
      OpenLink open;
      open.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(mine));
      open.peer = sender ? 1 : 0;
      open.nccl =
          nccl::process_group(c10::make_intrusive<c10d::PrefixStore>("link/" + std::to_string(link.id), state_->store),
                              sender ? 0 : 1, 2, options_.timeout);
      // The first transfer builds the link's communicator, its two ends meeting: here,
      // where both are sure to come, not in a stage's first send, whose receiver posts
      // its receive only once the send has returned its ticket.
      const c10::DeviceGuard on(open.device);
      std::vector<at::Tensor> probe{torch::zeros({1}, torch::TensorOptions().device(open.device))};
      auto work = enqueued(
          [&] { return sender ? open.nccl->send(probe, open.peer, 0) : open.nccl->recv(probe, open.peer, 0); });
      finish_on_host(*work, open.device, options_.timeout);
      state_->links.emplace(link.id, std::move(open));
      ++opened;
    } catch (const std::exception& e) {
      return Error::run_failed(what + ": " + text::message_of(e));
    }
  }
  return opened;
}

bool TensorTransport::loop_yields() const { return state_->loop_yields; }

TensorTicket TensorTransport::send(const train::Payload& payload, std::size_t to, std::uint32_t link) {
  if (const auto open = state_->links.find(link); open != state_->links.end() && payload->tensor.is_cuda()) {
    const OpenLink& gpu = open->second;
    const c10::DeviceGuard on(gpu.device);
    // NCCL's stream waits for the calling thread's current stream, which first waits
    // for the producer's event: ordered on the GPU, the host goes on.
    if (payload->ready) payload->ready->block(current_stream(gpu.device));
    torch::Tensor tensor = payload->tensor.to(gpu.device).contiguous();
    TensorTicket ticket;
    ticket.from = static_cast<std::uint32_t>(options_.rank);
    ticket.dtype = static_cast<std::int8_t>(tensor.scalar_type());
    ticket.shape = tensor.sizes().vec();
    ticket.link = link;
    std::vector<at::Tensor> tensors{tensor};
    std::lock_guard<std::mutex> lock(state_->post);
    try {
      state_->in_flight.push_back({enqueued([&] { return gpu.nccl->send(tensors, gpu.peer, 0); }), gpu.device});
    } catch (const std::exception& e) {
      throw std::runtime_error("sending a tensor to rank " + std::to_string(to) + " over GPU link " +
                               std::to_string(link) + ": " + text::message_of(e));
    }
    return ticket;
  }
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
        {enqueued([&] { return state_->world->send(tensors, static_cast<int>(to), static_cast<int>(ticket.tag)); }),
         std::nullopt});
  } catch (const std::exception& e) {
    throw std::runtime_error("sending a tensor to rank " + std::to_string(to) + ": " + text::message_of(e));
  }
  while (!state_->in_flight.empty() && state_->in_flight.front().work->isCompleted()) {
    state_->in_flight.front().work->wait(); // rethrows a failed send's error
    state_->in_flight.pop_front();
  }
  return ticket;
}

train::Payload TensorTransport::receive(const TensorTicket& ticket) { return take(*post_receive(ticket)); }

std::shared_ptr<TensorTransport::Arrival> TensorTransport::post_receive(const TensorTicket& ticket) {
  auto arrival = std::make_shared<Arrival>();
  arrival->from = ticket.from;
  if (ticket.link != 0) {
    const auto open = state_->links.find(ticket.link);
    if (open == state_->links.end())
      throw std::runtime_error("a tensor from rank " + std::to_string(ticket.from) + " came over GPU link " +
                               std::to_string(ticket.link) + ", which this rank has not opened");
    const OpenLink& gpu = open->second;
    const c10::DeviceGuard on(gpu.device);
    arrival->on_gpu = true;
    arrival->tensors.push_back(torch::empty(
        ticket.shape, torch::TensorOptions().dtype(static_cast<c10::ScalarType>(ticket.dtype)).device(gpu.device)));
    std::lock_guard<std::mutex> lock(state_->post);
    try {
      // NCCL matches a link's receives with its sends in order: a link is one stage's
      // sends to one other, whose messages, and so whose receives, come in that order.
      arrival->work = enqueued([&] { return gpu.nccl->recv(arrival->tensors, gpu.peer, 0); });
    } catch (const std::exception& e) {
      throw std::runtime_error("receiving a tensor from rank " + std::to_string(ticket.from) + " over GPU link " +
                               std::to_string(ticket.link) + ": " + text::message_of(e));
    }
    state_->posted.emplace(arrival.get(), arrival);
    return arrival;
  }
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
  std::shared_ptr<const c10::Event> ready;
  try {
    if (arrival.on_gpu) {
      // On the GPU: the current stream waits for NCCL's, and the tensor's consumer
      // waits for an event recorded on it.
      const c10::Device device = arrival.tensors.front().device();
      const c10::DeviceGuard on(device);
      arrival.work->wait(options_.timeout);
      auto event = std::make_shared<c10::Event>(device.type());
      event->record(current_stream(device));
      ready = std::move(event);
    } else {
      arrival.work->wait(options_.timeout);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("receiving a tensor from rank " + std::to_string(arrival.from) + ": " +
                             text::message_of(e));
  }
  at::Tensor tensor = arrival.tensors.front();
  {
    std::lock_guard<std::mutex> lock(state_->post);
    state_->posted.erase(&arrival);
  }
  if (!ready) return train::wrap(tensor);
  return std::make_shared<const train::TensorBox>(train::TensorBox{std::move(tensor), std::nullopt, std::move(ready)});
}

std::shared_ptr<TensorTransport::Group>
TensorTransport::group(const std::string& name, const std::vector<std::size_t>& ranks, const std::vector<int>& cuda) {
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
    client.port = state_->tcp_store->getPort();
    client.isServer = false;
    client.waitWorkers = false;
    client.timeout = options_.timeout;
    auto store = c10::make_intrusive<c10d::PrefixStore>(
        options_.key_prefix, c10::make_intrusive<c10d::TCPStore>(options_.store.host, client));
    group->size = static_cast<std::uint32_t>(ranks.size());
    group->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("group/" + name, store), mine, static_cast<int>(ranks.size()),
        gloo_options(options_, state_->device));
    const int gpu = cuda.size() == ranks.size() ? cuda[static_cast<std::size_t>(mine)] : -1;
    if (gpu >= 0 && gpu < nccl::visible_gpus()) {
      std::vector<std::string> uuids;
      for (std::size_t i = 0; i < ranks.size(); ++i)
        uuids.push_back(cuda[i] < 0                           ? std::string()
                        : i == static_cast<std::size_t>(mine) ? nccl::gpu_uuid(gpu)
                                                              : uuid_of(*store, ranks[i], cuda[i]));
      // Every member reads the same UUIDs, and so decides alike.
      if (distinct_gpus(uuids)) {
        group->device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpu));
        group->nccl = nccl::process_group(c10::make_intrusive<c10d::PrefixStore>("nccl-group/" + name, store), mine,
                                          static_cast<int>(ranks.size()), options_.timeout);
      }
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("group '" + name + "': " + text::message_of(e));
  }
  return group;
}

bool TensorTransport::uses_nccl(const Group& group) { return static_cast<bool>(group.nccl); }

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

/// Runs `collective` on `group`'s NCCL process group where `flat` is on its GPU, else on
/// its Gloo one, and returns once it is done: the caller waits, on the host, as for Gloo.
void run_collective(TensorTransport::Group& group, const at::Tensor& flat,
                    const std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend&)>& collective,
                    std::chrono::milliseconds timeout);

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
      run_collective(
          group, flat, [&](c10d::Backend& backend) { return backend.allreduce(one, sum); }, options_.timeout);
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
      run_collective(
          group, flat, [&](c10d::Backend& backend) { return backend.broadcast(one, copy); }, options_.timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error("broadcast in group '" + group.name + "': " + text::message_of(e));
    }
  });
}

namespace {

void run_collective(TensorTransport::Group& group, const at::Tensor& flat,
                    const std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend&)>& collective,
                    std::chrono::milliseconds timeout) {
  if (group.nccl && flat.device() == group.device) {
    const auto work = enqueued([&] { return collective(*group.nccl); });
    finish_on_host(*work, group.device, timeout);
    return;
  }
  enqueued([&] { return collective(*group.gloo); })->wait(timeout);
}

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
  std::deque<InFlight> in_flight;
  {
    std::lock_guard<std::mutex> lock(state_->post);
    in_flight.swap(state_->in_flight);
  }
  for (InFlight& send : in_flight)
    if (send.gpu)
      finish_on_host(*send.work, *send.gpu, options_.timeout);
    else
      send.work->wait(options_.timeout);
}

void TensorTransport::abandon() {
  std::lock_guard<std::mutex> lock(state_->post);
  state_->in_flight.clear(); // gloo lets go of a send whose buffer is gone
  // NCCL's communicators would wait for peers that may be gone: aborted, they do not.
  for (auto& [id, link] : state_->links)
    link.nccl->abort();
}

} // namespace actorpipe::transport
