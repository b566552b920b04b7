#pragma once

/// Which process runs each stage of a plan, in a run of several processes.

#include <actorpipe/error.hpp>
#include <actorpipe/plan.hpp>

#include <string>
#include <vector>

namespace actorpipe::launch {

/// rank[p][s]: the process that runs stage s of pipeline p. The plan's devices, in the
/// order of their ids, are dealt out in even runs to the `hosts` processes of ranks
/// `first_rank` onwards: a device's stages share a process, and devices next to each
/// other (one server's) stay together. Refused: more processes than devices, where
/// one would run nothing.
Result<std::vector<std::vector<std::size_t>>> place_stages(const Plan& plan, std::size_t hosts, std::size_t first_rank);

/// By rank (from `first_rank`, as placed): the machine its process must be on, the
/// host name `cluster` gives the server of its devices (Server::host); empty where
/// the cluster names none. Refused, naming both: a process placed on the devices of
/// servers on two named machines (another process count splits them apart).
Result<std::vector<std::string>> process_hosts(const Plan& plan, const ClusterSpec& cluster,
                                               const std::vector<std::vector<std::size_t>>& placement,
                                               std::size_t first_rank);

} // namespace actorpipe::launch
