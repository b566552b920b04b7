#pragma once

/// The job actor: splits each batch over the pipelines, answers a step once all of
/// them have finished it, and watches every actor of the run. The first failure (an
/// actor's report, or an actor that ended abnormally) fails the step in progress with
/// a message naming the stage and micro-batch: a run ends, it never hangs.

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace actorpipe::actors {

/// The first failure's message, read by the run after a step fails.
struct Failure {
  std::mutex mutex;
  std::string what;
};

/// `shares[p]`: samples of each batch for pipeline p. `watched`: actors to monitor,
/// with the names that messages give them.
caf::actor spawn_job(caf::actor_system& system, std::vector<caf::actor> pipelines, std::vector<std::uint32_t> shares,
                     std::vector<std::pair<caf::actor, std::string>> watched, std::shared_ptr<Failure> failure);

} // namespace actorpipe::actors
