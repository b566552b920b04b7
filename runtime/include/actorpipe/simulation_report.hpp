#pragma once

/// Simulated runs as people and programs read them: a summary with per-stage
/// tables, and JSON (docs/simulate.md).

#include <actorpipe/export.hpp>
#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/plan.hpp>
#include <actorpipe/simulator.hpp>

#include <string>
#include <vector>

namespace actorpipe {

/// A simulated run: iteration times, per-stage busy/bubble/sync, the fullest devices
/// and the busiest links.
ACTORPIPE_EXPORT std::string format_simulation(const SimulationReport& report, const Plan& plan,
                                               const ClusterSpec& cluster);

/// The same as JSON (docs/simulate.md lists the fields).
ACTORPIPE_EXPORT std::string simulation_to_json(const SimulationReport& report, const Plan& plan,
                                                const ClusterSpec& cluster);

} // namespace actorpipe
