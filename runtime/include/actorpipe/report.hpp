#pragma once

/// Every report at once, for a program that writes several: plans (plan_report.hpp),
/// simulations (simulation_report.hpp) and runs (run_report.hpp). Code that writes one
/// kind includes its header alone.

#include <actorpipe/plan_report.hpp>
#include <actorpipe/run_report.hpp>
#include <actorpipe/simulation_report.hpp>
