#pragma once

/// Which process runs each stage of a plan, in a run of several processes.

#include <actorpipe/error.hpp>
#include <actorpipe/plan.hpp>

#include <vector>

namespace actorpipe::launch {

/// rank[p][s]: the process that runs stage s of pipeline p. The plan's devices, in the
/// order of their ids, are dealt out in even runs to the `hosts` processes of ranks
/// `first_rank` onwards: a device's stages share a process, and devices next to each
/// other (one server's) stay together. Refused: more processes than devices, where
/// one would run nothing.
Result<std::vector<std::vector<std::size_t>>> place_stages(const Plan& plan, std::size_t hosts, std::size_t first_rank);

} // namespace actorpipe::launch
