#pragma once

/// The messages the training actors exchange. Tensors travel as Payload handles, so a
/// message between actors of one process carries a pointer, never a copy.
///
///   run ─step(n, batch)→ job ─step(n, share)→ pipeline
///   pipeline ─forward(n, micro, input)→ stage 0 ─forward→ … ─→ stage S−1
///            ─labels(n, micro, labels, scale)→ stage S−1
///   stage s ─backward(n, micro, gradient)→ stage s−1
///   stage ─grads(pipeline)→ sync group ─synced→ stage ─done(n, stage, loss)→ pipeline
///   any actor ─failed(what)→ job
///
/// `n` is the run's step number: the run queues step n + 1 while step n runs, so a
/// stage may hold inputs of both.

#include "../runtime/src/train/payload.hpp"

#include <caf/all.hpp>

namespace actorpipe::actors {

using connect_atom = caf::atom_constant<caf::atom("connect")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using forward_atom = caf::atom_constant<caf::atom("forward")>;
using backward_atom = caf::atom_constant<caf::atom("backward")>;
using labels_atom = caf::atom_constant<caf::atom("labels")>;
using grads_atom = caf::atom_constant<caf::atom("grads")>;
using synced_atom = caf::atom_constant<caf::atom("synced")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using failed_atom = caf::atom_constant<caf::atom("failed")>;

} // namespace actorpipe::actors

// Payloads stay inside one process; the c10d transport will carry tensors between
// processes.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorpipe::train::Payload)
