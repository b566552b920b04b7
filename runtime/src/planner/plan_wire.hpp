#pragma once

/// A plan as exact text, for a process that must run the plan another made (a worker
/// of `actorpipe launch`): every field, the schedule in its own text form, numbers as
/// they were. Not plan.json, which reports a plan to people and leaves fields out.

#include <actorpipe/error.hpp>
#include <actorpipe/plan.hpp>

#include <string>
#include <string_view>

namespace actorpipe::planner {

/// `plan` as text that plan_from_wire() reads back equal.
std::string plan_to_wire(const Plan& plan);

/// The plan plan_to_wire() wrote; bad input naming the field that is missing or wrong.
Result<Plan> plan_from_wire(std::string_view text);

} // namespace actorpipe::planner
