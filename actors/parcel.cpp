/// Parcels: packing a payload for its route, opening a parcel into a payload.

#include "parcel.hpp"

#include <stdexcept>

namespace actorpipe::actors {

Parcel pack(train::Payload payload, const Route& route) {
  Parcel parcel;
  const train::BatchRows* rows = train::batch_rows(payload);
  if (route.transport != nullptr && rows && route.makes_rows) {
    parcel.remote = true;
    parcel.rows = *rows;
    parcel.by_rows = true;
    return parcel;
  }
  if (payload && !train::has_tensor(payload))
    throw std::logic_error("rows of a batch made without its tensors went where nobody makes them");
  if (route.transport == nullptr) {
    parcel.payload = std::move(payload);
    return parcel;
  }
  parcel.remote = true;
  parcel.ticket = route.transport->send(payload, route.rank, route.link);
  return parcel;
}

Incoming open(Parcel& parcel, transport::TensorTransport* transport, const RowMaker& make_rows) {
  Incoming incoming;
  if (!parcel.remote) {
    incoming.payload_ = std::move(parcel.payload);
    return incoming;
  }
  if (parcel.by_rows) {
    if (!make_rows) throw std::runtime_error("rows of a batch arrived at a process that has no data to make them from");
    incoming.payload_ = make_rows(parcel.rows);
    return incoming;
  }
  if (transport == nullptr)
    throw std::runtime_error("a tensor from rank " + std::to_string(parcel.ticket.from) +
                             " arrived at a process without a tensor transport");
  incoming.arrival_ = transport->post_receive(parcel.ticket);
  incoming.transport_ = transport;
  return incoming;
}

bool Incoming::landed() const { return !arrival_ || transport_->landed(*arrival_); }

train::Payload Incoming::take() {
  if (arrival_) {
    payload_ = transport_->take(*arrival_);
    arrival_.reset();
  }
  return std::move(payload_);
}

} // namespace actorpipe::actors
