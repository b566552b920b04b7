#pragma once

/// What stragglers make of one action's time, shared by the simulator and the
/// emulated devices of a run, so that both read a straggler spec alike.

#include <actorpipe/simulator.hpp>

#include <random>

namespace actorpipe {

/// An action of `ms` on `device`, starting at `start_ms` (modelled time since the run
/// began): × the factor of each slow window it starts in, then + the delay of each
/// random delay for the device that strikes (drawn from `random`).
double straggled_ms(const Stragglers& stragglers, DeviceId device, double start_ms, double ms, std::mt19937_64& random);

} // namespace actorpipe
