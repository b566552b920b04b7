#pragma once

/// What a run's actors are made from: the sync policy's executor over the replicas,
/// the job actor's config (computations, sync hooks, emulated devices and links) and
/// the scale of modelled time. The process that runs a job makes one; so does each
/// worker process of a run of several, for the stages it runs.

#include "job_actor.hpp"

#include "train/session.hpp"
#include "train/sync_executor.hpp"

#include <actorpipe/training.hpp>

#include <memory>
#include <optional>

namespace actorpipe::actors {

struct RunSetup {
  std::optional<train::SyncExecutor> sync; ///< with several pipelines
  /// Its hooks hold this setup's `sync`: the setup stays where it is made.
  JobConfig job;
  double time_scale = 1; ///< modelled ms per wall ms (1 / dilation on emulated devices)

  bool asynchronous() const { return job.asynchronous(); }
};

/// The setup of `plan` over `session`'s workers. Errors name the job's key: a sync
/// policy not found or refusing its round 0, a straggler specification that does not
/// parse. The caller sets the config's step, origin, traces and failure.
Result<std::unique_ptr<RunSetup>> prepare_run(const JobSpec& job, const Plan& plan, const RunOptions& options,
                                              train::Session& session);

} // namespace actorpipe::actors
