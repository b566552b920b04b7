#pragma once

/// Where a process of a multi-process run stands: its rank among the run's processes
/// and where the coordinator listens, as flags give them or as a launcher sets them in
/// the environment (torchrun, Slurm, Open MPI: each in variables of its own).

#include <actorpipe/error.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace actorpipe::launch {

/// A host and a port: `HOST:PORT`, an IPv6 host in brackets (`[::1]:29500`).
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;

  std::string text() const;
};

/// Reads `HOST:PORT`; `what` names where it came from (a flag, a variable) in the error.
/// Port 0 ("any free one") only where `any_port` allows it, as for a listener: a
/// worker must know where to go.
Result<Endpoint> parse_endpoint(std::string_view text, std::string_view what, bool any_port = false);

/// The address of this machine that its packets to `peer` leave from (the kernel's
/// route, asked through a UDP socket that sends nothing): where a worker's tensor
/// connections bind, reachable from the coordinator's side. An error names `peer`
/// when it cannot be resolved or reached.
Result<std::string> address_towards(const Endpoint& peer);

/// A socket listening on `at` (an address or a name of this machine; port 0: any free
/// one), which the caller owns: where a run's listeners bind, checked before the run
/// writes anything. An error says why it cannot (no such name, not this machine's
/// address, the port taken), naming neither flag nor listener: the caller does.
Result<int> listen_on(const Endpoint& at);

struct ProcessPlace {
  std::size_t rank = 0;       ///< 0 is the coordinator, which hosts stages too
  std::size_t world = 1;      ///< processes in all
  std::size_t local_rank = 0; ///< among the processes of its server
  /// Where rank 0 listens, where the launcher says (MASTER_ADDR and MASTER_PORT, which
  /// torchrun sets and Slurm and Open MPI scripts set by convention).
  std::optional<Endpoint> coordinator;
  std::string launcher; ///< "torchrun", "slurm" or "openmpi": whose variables these were
};

/// Reads a launcher's variables through `get` (std::getenv in a run): torchrun's
/// RANK, WORLD_SIZE, LOCAL_RANK; else Slurm's SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID; else Open MPI's OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
/// OMPI_COMM_WORLD_LOCAL_RANK; and MASTER_ADDR, MASTER_PORT with any of them. None when
/// no launcher set its rank. An error names the variable: not a count, a rank outside
/// the size, a rank without its size, an address without its port.
Result<std::optional<ProcessPlace>> place_from_environment(const std::function<const char*(const char*)>& get);

} // namespace actorpipe::launch
