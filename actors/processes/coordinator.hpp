#pragma once

/// The coordinator's side of a run of several processes: the gate workers join through
/// (a worker presents the job's token first; a wrong one is refused and logged with the
/// worker's address), the tensor transport's store and world, and the stage hosts of
/// the workers once each is ready. run_training() then runs the job over them.

#include "processes/process_protocol.hpp"

#include "launch/process_place.hpp"
#include "launch/tls_files.hpp"
#include "transport/tensor_transport.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace actorpipe::actors {

/// How a process coordinates a run of several (actors::run_training's `coordinate`).
struct CoordinateOptions {
  std::size_t workers = 1;                 ///< processes that run the stages: ranks 1 … workers
  std::string token;                       ///< the job's secret (launch/job_token.hpp)
  launch::Endpoint listen{"127.0.0.1", 0}; ///< the gate's address; port 0: any free one
  /// What each worker loads: the job file and its overrides (the coordinator's
  /// profile and plan go with them).
  std::string job_file;
  std::vector<std::string> overrides;
  /// Called once the gate listens, with its address: start the workers here.
  std::function<void(const launch::Endpoint& gate)> on_listening;
  std::chrono::seconds join_timeout{120}; ///< for every worker to be ready
  /// A worker silent this long is lost (heartbeat_actor.hpp); so is one whose
  /// connection closes, and one with a stage stuck past RunOptions::stall_timeout.
  std::chrono::milliseconds heartbeat_timeout{3000};
  /// After a lost worker, the run starts its workers again (`on_listening` is called
  /// again) and resumes from the last checkpoint it wrote, at most this many times.
  std::uint32_t restarts = 0;
  launch::TlsFiles tls; ///< none: plain TCP
  /// Where refused workers are logged (stderr in the CLI).
  std::function<void(const std::string& line)> log;
};

/// The gate (coordinate() spawns it): hands each worker that presents `token` the
/// `order`, its rank set (1, 2, … up to `workers`): the first free one whose host is
/// the worker's, else the first free one any host may take; refuses the others, with a
/// line to `log` naming their address; calls `on_ready` as each worker's host is ready.
struct GateConfig {
  std::string token;
  JobOrder order;
  std::size_t workers = 1;
  /// By rank − 1: the host name of the machine whose worker takes it (the cluster
  /// file's, launch::process_hosts()); empty or missing: any machine's.
  std::vector<std::string> hosts;
  std::function<void(const std::string& line)> log;
  std::function<void(std::uint64_t rank, stage_host_actor host)> on_ready;
  /// A worker it admitted that ended (or lost its connection) before it was ready:
  /// what to tell ("worker process 2 (HOST pid P) ended before the run began").
  std::function<void(const std::string& what)> on_lost;
};
gate_actor spawn_gate(caf::actor_system& system, GateConfig config);

/// The workers of a run, joined and ready.
struct Coordination {
  std::unique_ptr<transport::TensorTransport> transport;
  std::map<std::uint64_t, stage_host_actor> hosts; ///< by rank
  gate_actor gate;
  ~Coordination();
};

/// Listens, starts the workers (`options.on_listening`), hands each the `order` (its
/// rank set as it joins, on the machine `hosts` names, GateConfig), joins the tensor
/// transport as rank 0, and waits until every worker's host is ready. An error says
/// which worker did not come, or why.
Result<std::unique_ptr<Coordination>> coordinate(caf::actor_system& system, const CoordinateOptions& options,
                                                 JobOrder order, std::vector<std::string> hosts = {});

} // namespace actorpipe::actors
