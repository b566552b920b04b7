#pragma once

/// Plans as people and programs read them: a summary with a per-stage table, and JSON.

#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/plan.hpp>

#include <string>

namespace actorpipe {

/// Summary lines and a table: stage, blocks, devices, compute per micro-batch,
/// parameter, optimizer, activation and total memory against the device's.
std::string format_plan(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster);

/// The plan as a JSON document (docs/plan-json.md lists the fields).
std::string plan_to_json(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster);

} // namespace actorpipe
