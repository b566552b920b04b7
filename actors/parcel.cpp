/// Parcels: packing a payload for its route, opening a parcel into a payload.

#include "parcel.hpp"

#include <stdexcept>

namespace actorpipe::actors {

Parcel pack(train::Payload payload, const Route& route) {
  Parcel parcel;
  if (route.transport == nullptr) {
    parcel.payload = std::move(payload);
    return parcel;
  }
  parcel.ticket = route.transport->send(payload, route.rank);
  parcel.remote = true;
  return parcel;
}

train::Payload open(Parcel& parcel, transport::TensorTransport* transport) {
  if (!parcel.remote) return std::move(parcel.payload);
  if (transport == nullptr)
    throw std::runtime_error("a tensor from rank " + std::to_string(parcel.ticket.from) +
                             " arrived at a process without a tensor transport");
  return transport->receive(parcel.ticket);
}

} // namespace actorpipe::actors
