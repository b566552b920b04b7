#pragma once

/// The coordinator's dealings with its workers' stages in a run of several processes
/// (run_training.cpp drives the run): starting the workers, having their hosts spawn
/// the stages, a resumed run's state into them, the state that evaluation and
/// checkpoints read out of them, and their spans at the end.

#include "processes/coordinator.hpp"
#include "injected_failure.hpp"
#include "stage_trace.hpp"

#include <actorpipe/job.hpp>
#include <actorpipe/plan.hpp>

#include <caf/fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace actorpipe::train {
class Session;
}

namespace actorpipe::actors {

/// Listens for the workers, hands each its order (the job, the plan, its place:
/// `placement` [pipeline][stage] → rank, on the machine `hosts` names; whether a bound
/// worker binds its stage threads, `pin_threads`; the run's steps from `first_step` to
/// `total_steps`) and waits until they are ready.
Result<std::unique_ptr<Coordination>>
start_workers(caf::actor_system& system, const CoordinateOptions& coordinate, const JobSpec& job, const Plan& plan,
              const std::vector<std::vector<std::uint64_t>>& placement, std::uint64_t first_step,
              std::uint64_t total_steps, Clock::time_point origin, const std::optional<InjectedFailure>& inject,
              std::vector<std::string> hosts, std::uint64_t data_fingerprint, bool pin_threads);

/// What the workers' hosts spawned.
struct RemoteStages {
  std::vector<std::vector<stage_actor>> stages;                    ///< [p][s], empty where none is remote
  std::map<std::uint64_t, std::vector<averager_actor>> averagers;  ///< by rank: HostedStages::averagers
  std::map<std::uint64_t, std::vector<server_copy_actor>> servers; ///< by rank: HostedStages::servers
  std::set<std::uint64_t> same_data;                               ///< ranks: HostedStages::same_data
  std::vector<pipeline_actor> pipelines; ///< by pipeline: HostedStages::pipelines (empty: none there)
};

/// Has each worker's host spawn its stages (and averagers, server copies, and the pipeline
/// actors of the pipelines whole there).
Result<RemoteStages> spawn_remote_stages(caf::actor_system& system, Coordination& coordination,
                                         const std::vector<std::vector<std::uint64_t>>& placement, const Plan& plan);

/// A resumed run's state, which this process loaded from the checkpoint, into the
/// workers' stages: parameters, buffers and optimizer state, every replica alike.
Status push_state(caf::scoped_actor& self, Coordination& coordination,
                  const std::vector<std::vector<std::uint64_t>>& placement, train::Session& session);

/// Pipeline 0's parameters, buffers and optimizer state (what the policy trains: an
/// elastic run's centre, scheduled averaging's mean), from the workers that run its
/// stages into this process's copy, which evaluation and checkpoints read. Every host
/// is asked at once: under scheduled averaging the mean is summed across all of them.
Status pull_state(caf::scoped_actor& self, Coordination& coordination,
                  const std::vector<std::vector<std::uint64_t>>& placement, train::Session& session);

/// The spans the workers' stages recorded, into `traces` (p · S + s). A worker that
/// does not answer keeps its stages' tracks empty.
void collect_traces(caf::scoped_actor& self, Coordination& coordination, const Plan& plan,
                    std::vector<StageTrace>& traces);

} // namespace actorpipe::actors
