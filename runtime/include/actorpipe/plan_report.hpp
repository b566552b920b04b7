#pragma once

/// Plans as people and programs read them: a summary with a per-stage table, the
/// shapes tried, plans side by side, and JSON.

#include <actorpipe/export.hpp>
#include <actorpipe/cluster_spec.hpp>
#include <actorpipe/model_profile.hpp>
#include <actorpipe/plan.hpp>

#include <string>
#include <vector>

namespace actorpipe {

/// Summary lines and a table: stage, blocks, devices, compute per micro-batch,
/// parameter, optimizer, activation and total memory against the device's.
ACTORPIPE_EXPORT std::string format_plan(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster);

/// The best shapes the planner tried (Plan::tried) as a table, best first.
ACTORPIPE_EXPORT std::string format_tried_shapes(const Plan& plan);

/// The plan as a JSON document: the fields of Plan and each stage's estimates.
ACTORPIPE_EXPORT std::string plan_to_json(const Plan& plan, const ModelProfile& profile, const ClusterSpec& cluster);

/// Plans of one job side by side, a row each: partitioner, mapper, shape, predicted
/// time and samples/s (with the ratio to the first plan), balance, memory, search time.
ACTORPIPE_EXPORT std::string format_comparison(const std::vector<Plan>& plans, const ClusterSpec& cluster);

/// The plans as a JSON array of plan documents.
ACTORPIPE_EXPORT std::string comparison_to_json(const std::vector<Plan>& plans, const ModelProfile& profile,
                                                const ClusterSpec& cluster);

} // namespace actorpipe
