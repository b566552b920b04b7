#pragma once

/// The group-scheduler actor (SDPipe's central scheduling): one per run with an
/// asynchronous policy, serving every stage index. It never touches tensors: it drives
/// a sync::GroupScheduler per stage with its clock, has the stage's averager (in a run of
/// several processes, that of each process with a member) average each group it forms
/// (`average`), and lets a member alone go on (`synced`). It tells each stage's
/// scheduler which pipelines are away: those with no work (the job says) and those held
/// in another stage's round, for whom a forced round must not wait. Windows are in
/// modelled time: on emulated devices, wall time × the run's time scale. Its timer is
/// CAF's clock, which the deterministic tests drive.

#include "protocol.hpp"

#include <actorpipe/plugin.hpp>

#include <caf/fwd.hpp>

#include <vector>

namespace actorpipe::actors {

struct GroupSchedulerConfig {
  GroupScheduling scheduling;
  std::vector<std::vector<stage_actor>> stages; ///< [pipeline][stage]
  /// [stage][pipeline]: the averager of that replica's process, told of each group
  /// with a member there (in one process, one averager per stage index).
  std::vector<std::vector<averager_actor>> averagers;
  double time_scale = 1; ///< modelled ms per wall ms
  job_actor job;         ///< told of a protocol error
};

group_scheduler_actor spawn_group_scheduler(caf::actor_system& system, GroupSchedulerConfig config);

} // namespace actorpipe::actors
