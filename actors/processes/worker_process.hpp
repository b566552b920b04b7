#pragma once

/// A worker process of a run of several: joins the coordinator's gate with the job's
/// token, loads the job as the coordinator did and takes the plan it sent (checked
/// whole and against the job here; it plans nothing), joins the tensor transport, and
/// hosts the stages the placement gives it until the coordinator ends the run or goes
/// away.

#include "launch/process_place.hpp"
#include "launch/tls_files.hpp"

#include <actorpipe/error.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace actorpipe::actors {

struct WorkerProcessOptions {
  launch::Endpoint coordinator;
  std::string token;
  launch::TlsFiles tls;  ///< none: plain TCP
  std::string host_name; ///< this machine's: the coordinator places the worker by it and logs it
  /// How long to keep trying to reach the coordinator: a launcher starts a run's
  /// processes together, and the workers may be up before the coordinator listens.
  std::chrono::seconds connect_timeout{60};
  /// The cores this process and its stages run on (`--cpus`; `launch` gives each of its
  /// workers an even share of the machine's): its stage threads are then bound among
  /// them as one process binds them among all. Empty: where it was started, the stages
  /// placed by the operating system, as processes that share the cores need.
  std::vector<int> cores;
  /// Progress lines (joined, planned, ready) on stderr in the CLI.
  std::function<void(const std::string& line)> log;
};

/// Ok once the coordinator ended the run; an error names what failed: refused (a wrong
/// token), a plan unlike the coordinator's, a coordinator that went away.
Status run_worker(const WorkerProcessOptions& options);

} // namespace actorpipe::actors
