#pragma once

/// A tensor on its way to an actor: the one seam between the actors and the transport.
/// To an actor of the same process a parcel carries the Payload (a pointer: nothing is
/// copied); to an actor in another process, the ticket of its bytes, posted ahead
/// through c10d (transport/tensor_transport.hpp), which the receiver takes in as it
/// opens the parcel, or, for rows of a training batch sent to a process with the same
/// data, which rows they are, for it to make. Only a ticket or rows cross processes:
/// CAF serialises a parcel as those, and refuses to serialise one that holds a pointer.

#include "train/payload.hpp"
#include "transport/tensor_transport.hpp"

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>

#include <functional>

namespace actorpipe::transport {

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, TensorTicket& x) {
  return f(caf::meta::type_name("tensor_ticket"), x.from, x.tag, x.dtype, x.shape, x.link);
}

} // namespace actorpipe::transport

namespace actorpipe::actors {

/// Where a parcel goes: to an actor of this process (no transport), or to one in
/// process `rank`, through `transport`.
struct Route {
  transport::TensorTransport* transport = nullptr;
  std::size_t rank = 0;
  /// That process makes a batch's rows from its own copy of the data, the same as this
  /// one's (train::Session::data_fingerprint): a batch's rows go as which rows they are.
  bool makes_rows = false;
  /// The GPU link between the two stages, in this direction
  /// (transport::TensorTransport::link_id): a tensor on a GPU goes over it where the
  /// transport opened it for NCCL; 0 for routes that are no stage's link.
  std::uint32_t link = 0;
};

/// Makes rows of a batch from this process's data (train::Session::rows).
using RowMaker = std::function<train::Payload(const train::BatchRows&)>;

struct Parcel {
  train::Payload payload;         ///< to an actor of the same process
  transport::TensorTicket ticket; ///< from another process: where its bytes wait
  train::BatchRows rows;          ///< from another process: rows of a batch the receiver makes
  bool remote = false;            ///< the ticket, or the rows, not the payload, hold the tensor
  bool by_rows = false;           ///< the rows, not the ticket

  /// The same tensor: one pointer, one ticket, or the same rows.
  bool operator==(const Parcel&) const = default;
};

/// `payload` packed for `route`: as it is within the process; to another, which rows
/// of a batch it is where the route's process makes them, else its bytes, posted to
/// the route's rank now (send() never waits for the receiver).
Parcel pack(train::Payload payload, const Route& route = {});

/// A parcel's tensor, on hand or on its way in.
class Incoming {
public:
  Incoming() = default;
  /// Whether take() would return at once.
  bool landed() const;
  /// The tensor, once its bytes are in. Throws std::runtime_error for a transfer that
  /// fails.
  train::Payload take();

private:
  friend Incoming open(Parcel& parcel, transport::TensorTransport* transport, const RowMaker& make_rows);
  train::Payload payload_;
  std::shared_ptr<transport::TensorTransport::Arrival> arrival_;
  transport::TensorTransport* transport_ = nullptr;
};

/// The tensor in `parcel`: its payload; the rows it names, made now by `make_rows`; or
/// the bytes its ticket names, whose receive through `transport` is posted now and
/// waited for by take(). A stage thus handles its next messages while bytes land,
/// rather than wait in one for bytes still on their way. Throws std::runtime_error for
/// a remote parcel with no transport (or rows with no maker) to take it in.
Incoming open(Parcel& parcel, transport::TensorTransport* transport, const RowMaker& make_rows = {});

} // namespace actorpipe::actors

namespace actorpipe::train {

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, BatchRows& x) {
  return f(caf::meta::type_name("batch_rows"), x.epoch, x.index, x.first, x.count, x.labels);
}

} // namespace actorpipe::train

namespace actorpipe::actors {

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, Parcel& x) {
  // Saved: a pointer never leaves its process. Loaded: what came is a ticket or rows.
  auto only_tickets = [&x]() -> caf::error {
    if (!x.remote) return caf::make_error(caf::sec::invalid_argument);
    return caf::none;
  };
  auto arrived = [&x]() -> caf::error {
    x.remote = true;
    x.payload.reset();
    return caf::none;
  };
  return f(caf::meta::type_name("parcel"), x.ticket, x.rows, x.by_rows, caf::meta::save_callback(only_tickets),
           caf::meta::load_callback(arrived));
}

} // namespace actorpipe::actors
