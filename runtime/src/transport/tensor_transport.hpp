#pragma once

/// Tensors between the processes of a run, through LibTorch's c10d: Gloo process groups
/// over TCP (and NCCL between GPUs, below), met through a TCPStore that rank 0 (the
/// coordinator) hosts on the control plane's address only, its keys under a prefix only
/// the job's token gives. Only tensors travel here; the messages that say what to do
/// with them are CAF's. The header shows no LibTorch, so the actors include it without LibTorch's headers.
///
/// Point-to-point: send() posts the bytes and returns at once with a ticket (who sent
/// what, under which tag), which the sender puts in the CAF message that tells the
/// receiver; receive() takes the ticket and blocks until the bytes are in (or
/// post_receive() posts the receive at once, to be waited for later). A send never
/// waits for its receiver, so two stages sending to each other cannot deadlock.
///
/// Collectives run over a group of ranks (a stage index's processes, say), each group
/// a c10d Gloo process group of its own, met through the same store: collectives of one
/// group run in the order its members call them (the caller waits while the process
/// group's thread runs them), and groups do not wait on each other.
///
/// Tensors on GPUs: NCCL (c10d's ProcessGroupNCCL) carries them where each end is on a
/// GPU of its own. A link between two stages in different processes (one direction of
/// it, opened by open_gpu_links()) and a group whose members each hold their tensors on
/// a GPU of their own then go through NCCL, GPU to GPU, ordered by CUDA events and
/// streams, never waiting on the host. NCCL cannot put two ranks on one GPU: where both
/// ends share one (two processes on a one-GPU server), Gloo carries the tensor through
/// the host. The GPUs are told apart by their UUIDs, which each rank publishes in the
/// store as it joins, so that processes on one machine named as different servers by
/// their cluster still see one GPU.

#include "launch/process_place.hpp"
#include "train/payload.hpp"

#include <actorpipe/error.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::transport {

/// What a receiver needs to take a tensor sent to it: the sender's rank, the tag the
/// bytes travel under, and the tensor's element type (c10::ScalarType) and shape.
struct TensorTicket {
  std::uint32_t from = 0;
  std::uint32_t tag = 0;
  std::int8_t dtype = 0;
  std::vector<std::int64_t> shape;
  /// The GPU link the bytes travel over (NCCL, in the order they were sent: the
  /// receiver takes them in that order); 0: Gloo, under `tag`.
  std::uint32_t link = 0;

  bool operator==(const TensorTicket&) const = default;
};

struct TransportOptions {
  launch::Endpoint store; ///< the store's address: where rank 0 hosts it (port 0 there: any free one)
  /// Every key of the job's lives under this prefix (launch::store_prefix of its token):
  /// the store itself admits any client that reaches its port.
  std::string key_prefix;
  std::size_t rank = 0;
  std::size_t world = 1;
  std::string host = "127.0.0.1";           ///< the address this process's connections bind to
  std::chrono::milliseconds timeout{60000}; ///< for the store and for each operation
  /// This process's stage threads. Where they are as many as its cores or more,
  /// Gloo's event loop thread (it reads arriving bytes into their buffers) runs only on
  /// cores they leave idle (SCHED_IDLE): the loop retries, without sleeping, a
  /// connection whose lock another thread holds, and on a crowded machine that thread
  /// then waits for a core the retries take from it (docs/running.md).
  std::size_t compute_threads = 0;
  /// Whether this process joins collectives for moves its stages take no part in (its
  /// copy of an asynchronous elastic centre, or of a parameter server that steps on each
  /// push, following another process's move), at times its stages compute on. The loop must then take
  /// those bytes in while they compute, and runs as any thread however many they are:
  /// on cores the stages never leave idle, the move waited until they ran out of work.
  bool follows_others = false;
};

/// One direction between stages `from_stage` and `to_stage` (neighbours) of a pipeline
/// whose processes differ and whose devices are both GPUs: what may go through NCCL.
struct GpuLink {
  std::uint32_t id = 0;           ///< TensorTransport::link_id() of the pair and direction
  std::size_t from = 0, to = 0;   ///< the sender's and the receiver's ranks
  int from_cuda = 0, to_cuda = 0; ///< their CUDA devices, each on its own machine
};

class TensorTransport {
public:
  /// The link from stage `from_stage` to its neighbour `to_stage` of pipeline `pipeline`
  /// (of pipelines of `stages` stages): the same number on both ends, never 0.
  static std::uint32_t link_id(std::size_t pipeline, std::size_t stages, std::size_t from_stage, std::size_t to_stage);

  /// Rank 0 hosts the store on `options.store` (port 0: any free one, which
  /// store_port() then says, for the workers to be told); the others connect to it. An
  /// error names the store's address and what failed.
  static Result<std::unique_ptr<TensorTransport>> open(const TransportOptions& options);

  /// Joins the group of all `world` ranks: returns once every rank has joined, or with
  /// an error naming the store when they do not within the timeout.
  Status join();

  ~TensorTransport();
  TensorTransport(const TensorTransport&) = delete;
  TensorTransport& operator=(const TensorTransport&) = delete;

  /// Opens NCCL for each of `links` this rank is an end of, in their order, which must be
  /// the same on every rank (a link's ends meet in the store, and a first transfer over
  /// it, here, builds its NCCL communicator: a send never waits for its receiver after
  /// that). A link whose ends share a GPU stays with Gloo. Returns how many of this
  /// rank's links now go through NCCL; an error names the link.
  Result<std::size_t> open_gpu_links(const std::vector<GpuLink>& links);

  std::size_t rank() const { return options_.rank; }
  std::size_t world() const { return options_.world; }
  std::uint16_t store_port() const;
  /// Whether Gloo's loop runs only on cores the stages leave idle (SCHED_IDLE; see
  /// TransportOptions::compute_threads), once joined.
  bool loop_yields() const;

  /// Posts `payload`'s tensor to rank `to` and returns its ticket at once; the transport
  /// keeps the tensor until the bytes are gone. A tensor on a GPU goes over GPU link
  /// `link` where it is open for NCCL, once its producer's stream has written it (the
  /// NCCL stream waits for its event; the host does not); else through the host (Gloo
  /// sends a contiguous tensor on the CPU: a copy is made where it is not). Throws
  /// std::runtime_error naming the peer when c10d refuses.
  TensorTicket send(const train::Payload& payload, std::size_t to, std::uint32_t link = 0);

  /// The tensor `ticket` describes, once its bytes are in (from a GPU link: on this
  /// end's GPU, with an event its consumer's stream waits for). Throws
  /// std::runtime_error naming the sender when the transfer fails or times out.
  train::Payload receive(const TensorTicket& ticket);

  /// A receive posted ahead: its bytes land while the receiver does other work (a
  /// stage takes in the next step's inputs while it computes this one's), and take()
  /// waits only for what has not landed yet. The transport keeps the buffer until
  /// taken, so bytes that land after their receiver gave up write into live memory.
  struct Arrival;
  std::shared_ptr<Arrival> post_receive(const TensorTicket& ticket);
  bool landed(Arrival& arrival);
  /// As receive(); the transport lets go of the arrival.
  train::Payload take(Arrival& arrival);

  /// A group of ranks for collectives: every member (and no other rank) makes it, each
  /// group in the same order on every member, with the same `name` and `cuda`. Where
  /// `cuda` names each member's CUDA device (by the order of `ranks`), on which it holds
  /// the tensors of its collectives, and no two members share a GPU, collectives of
  /// tensors on GPUs go through NCCL; else, and for tensors on the CPU, through Gloo.
  struct Group;
  std::shared_ptr<Group> group(const std::string& name, const std::vector<std::size_t>& ranks,
                               const std::vector<int>& cuda = {});
  /// Whether `group`'s collectives of tensors on GPUs go through NCCL.
  static bool uses_nccl(const Group& group);

  /// Sums each of `tensors` (of one element type) over the members of `group` (this
  /// rank one of them), in place. Same shapes, same order on every member.
  void all_reduce_sum(Group& group, const std::vector<train::Payload>& tensors);

  /// Gives every member of `group` the `tensors` (of one element type, any) of its
  /// member `root` (an index among the group's ranks), in place. Same shapes, same
  /// order on every member.
  void broadcast(Group& group, std::size_t root, const std::vector<train::Payload>& tensors);

  /// The tensors as one 1-D tensor, where each lies right after the one before in one
  /// buffer (a stage's gradient buckets, train/gradient_buckets.hpp); empty where they
  /// do not. all_reduce_sum() and broadcast() move such tensors in that buffer, with no
  /// copies.
  static train::Payload as_one_buffer(const std::vector<train::Payload>& tensors);

  /// Blocks until every send posted so far is delivered (before the process ends).
  void flush();

  /// Forgets the sends still in flight: a run that failed, whose peers may be gone or
  /// hung, ends without waiting the timeout for them.
  void abandon();

private:
  explicit TensorTransport(TransportOptions options);
  struct State;
  TransportOptions options_;
  std::unique_ptr<State> state_;
};

} // namespace actorpipe::transport
