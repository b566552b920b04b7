#pragma once

/// The plugin interfaces' value types (actorpipe/plugin.hpp) as Lua tables, and back:
/// what a plugin written in Lua is given and what it returns (docs/lua.md, Plugins in
/// Lua). Field names are those of the C++ types. Numbers that name something (a device,
/// a server, a block boundary) keep their 0-based C++ values, as in the JSON outputs;
/// Lua's lists count from 1 as always, so device d is ctx.cluster.devices[d + 1].

#include <actorpipe/plugin.hpp>

#include <string>

struct lua_State;

namespace actorpipe::lua {

void push_profile(lua_State* L, const ModelProfile& profile);
void push_plan_context(lua_State* L, const PlanContext& context);
void push_partition(lua_State* L, const Partition& partition);
void push_schedule_request(lua_State* L, const ScheduleRequest& request);
void push_sync_request(lua_State* L, const SyncRequest& request);

/// {cuts = {...}} or the list of cuts itself; a cut is a block boundary (a number) or
/// {block = b, sub_block = s}.
Result<Partition> read_partition(lua_State* L, int index);
/// {devices = {{d, ...}, ...}} or that list itself: devices[p][s].
Result<Mapping> read_mapping(lua_State* L, int index);
/// A schedule in the schedule file's format, as text or as the table of its keys
/// ({name = ..., micro_batch_sizes = {...}, stages = {"F0 F1 B0 B1", ...}}); read and
/// validated as a schedule file is, `source` naming it in errors.
Result<Schedule> read_schedule(lua_State* L, int index, const std::string& source);
/// {kind = "allreduce_gradients" | "average_parameters" | "elastic", groups = {{p, ...},
/// ...}, alpha = a}.
Result<SyncRound> read_sync_round(lua_State* L, int index);

} // namespace actorpipe::lua
