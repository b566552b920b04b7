/// Plugin value types to Lua tables (pushed field by field: a partitioner may be asked
/// for a thousand-block profile many times a plan) and plugin results back (through
/// JSON, which names the place of a mistake).

#include "plugin/plugin_values.hpp"

#include "lua/lua_values.hpp"

#include <actorpipe/schedule_io.hpp>

#include "schedule/schedule_table.hpp"

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <type_traits>

namespace actorpipe::lua {

namespace {

using json = nlohmann::json;

void set(lua_State* L, const char* key, double value) {
  lua_pushnumber(L, value);
  lua_setfield(L, -2, key);
}
/// Counts and indices (std::size_t) go through the std::uint64_t overload.
static_assert(std::is_same_v<std::size_t, std::uint64_t>);
void set(lua_State* L, const char* key, std::uint64_t value) {
  lua_pushinteger(L, static_cast<lua_Integer>(value));
  lua_setfield(L, -2, key);
}
void set(lua_State* L, const char* key, std::uint32_t value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, key);
}
void set(lua_State* L, const char* key, int value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, key);
}
void set(lua_State* L, const char* key, bool value) {
  lua_pushboolean(L, value);
  lua_setfield(L, -2, key);
}
void set(lua_State* L, const char* key, const std::string& value) {
  lua_pushlstring(L, value.data(), value.size());
  lua_setfield(L, -2, key);
}

template <class T> void set_list(lua_State* L, const char* key, const std::vector<T>& values) {
  lua_createtable(L, static_cast<int>(values.size()), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      lua_pushnumber(L, values[i]);
    else
      lua_pushinteger(L, static_cast<lua_Integer>(values[i]));
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, key);
}

void set_options(lua_State* L, const PluginOptions& options) {
  lua_createtable(L, 0, static_cast<int>(options.size()));
  for (const auto& [key, value] : options)
    set(L, key.c_str(), value);
  lua_setfield(L, -2, "options");
}

/// The figures Block and SubBlock share.
template <class Part> void set_figures(lua_State* L, const Part& part) {
  set(L, "name", part.name);
  set(L, "forward_ms", part.forward_ms);
  set(L, "backward_ms", part.backward_ms);
  set(L, "output_bytes", part.output_bytes);
  set(L, "parameter_bytes", part.parameter_bytes);
  set(L, "stash_bytes_per_sample", part.stash_bytes_per_sample);
  set(L, "workspace_bytes_per_sample", part.workspace_bytes_per_sample);
  set(L, "forward_fixed_ms", part.forward_fixed_ms);
  set(L, "backward_fixed_ms", part.backward_fixed_ms);
  if (part.input_gradient_ms) set(L, "input_gradient_ms", *part.input_gradient_ms);
}

void push_cluster(lua_State* L, const ClusterSpec& cluster) {
  lua_createtable(L, 0, 4);
  set(L, "name", cluster.name);
  lua_createtable(L, 0, 2);
  set(L, "bandwidth", cluster.network.bandwidth);
  set(L, "latency", cluster.network.latency);
  lua_setfield(L, -2, "network");
  lua_createtable(L, static_cast<int>(cluster.servers.size()), 0);
  for (std::size_t i = 0; i < cluster.servers.size(); ++i) {
    const Server& server = cluster.servers[i];
    lua_createtable(L, 0, 7);
    set(L, "name", server.name);
    lua_createtable(L, static_cast<int>(server.pcie_switches.size()), 0);
    for (std::size_t k = 0; k < server.pcie_switches.size(); ++k) {
      lua_createtable(L, 0, 2);
      set(L, "bandwidth", server.pcie_switches[k].bandwidth);
      set(L, "host_bridge", server.pcie_switches[k].host_bridge);
      lua_seti(L, -2, static_cast<lua_Integer>(k + 1));
    }
    lua_setfield(L, -2, "pcie_switches");
    lua_createtable(L, static_cast<int>(server.host_bridges.size()), 0);
    for (std::size_t k = 0; k < server.host_bridges.size(); ++k) {
      lua_createtable(L, 0, 1);
      set(L, "bandwidth", server.host_bridges[k].bandwidth);
      lua_seti(L, -2, static_cast<lua_Integer>(k + 1));
    }
    lua_setfield(L, -2, "host_bridges");
    set(L, "inter_bridge_bandwidth", server.inter_bridge_bandwidth);
    set(L, "nvlink_bandwidth", server.nvlink_bandwidth);
    set(L, "nics", server.nics);
    set(L, "nic_bandwidth", server.nic_bandwidth);
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "servers");
  lua_createtable(L, static_cast<int>(cluster.devices.size()), 0);
  for (std::size_t i = 0; i < cluster.devices.size(); ++i) {
    const Device& device = cluster.devices[i];
    lua_createtable(L, 0, 9);
    set(L, "index", i);
    set(L, "name", device.name);
    set(L, "kind", device.kind);
    set(L, "speed", device.speed);
    set(L, "memory_bytes", device.memory_bytes);
    set(L, "memory_bandwidth", device.memory_bandwidth);
    set(L, "server", device.server);
    set(L, "pcie_switch", device.pcie_switch);
    set(L, "nvlink_group", device.nvlink_group);
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "devices");
}

void push_cut(lua_State* L, const Cut& cut) {
  lua_createtable(L, 0, 2);
  set(L, "block", cut.block);
  set(L, "sub_block", cut.sub);
}

// Reading results: the value as JSON first, so that every mistake is named by its path.

Result<std::uint64_t> whole_number(const json& value, const std::string& where) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::uint64_t>();
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (x >= 0 && std::floor(x) == x && x < 9e15) return static_cast<std::uint64_t>(x);
  }
  return Error::bad_input(where + ": expected a whole number ≥ 0, found " + value.dump());
}

/// `value` itself when it is a list, else its field `key`, which must be one.
Result<json> list_or_field(const json& value, const char* key) {
  if (value.is_array()) return value;
  if (value.is_object() && value.contains(key) && value[key].is_array()) return value[key];
  return Error::bad_input(std::string("expected a list, or a table with a list '") + key + "', and found " +
                          (value.is_object() ? "a table without one" : value.dump()));
}

Result<json> result_json(lua_State* L, int index) { return to_json(L, index, "result"); }

} // namespace

void push_profile(lua_State* L, const ModelProfile& profile) {
  lua_createtable(L, 0, 8);
  set(L, "name", profile.name);
  set(L, "reference_device", profile.reference_device);
  set(L, "batch_size", profile.batch_size);
  set(L, "input_bytes", profile.input_bytes);
  lua_createtable(L, static_cast<int>(profile.blocks.size()), 0);
  for (std::size_t b = 0; b < profile.blocks.size(); ++b) {
    const Block& block = profile.blocks[b];
    lua_createtable(L, 0, 9);
    set_figures(L, block);
    lua_createtable(L, static_cast<int>(block.sub_blocks.size()), 0);
    for (std::size_t s = 0; s < block.sub_blocks.size(); ++s) {
      lua_createtable(L, 0, 8);
      set_figures(L, block.sub_blocks[s]);
      lua_seti(L, -2, static_cast<lua_Integer>(s + 1));
    }
    lua_setfield(L, -2, "sub_blocks");
    lua_seti(L, -2, static_cast<lua_Integer>(b + 1));
  }
  lua_setfield(L, -2, "blocks");
}

void push_plan_context(lua_State* L, const PlanContext& c) {
  lua_createtable(L, 0, 17);
  push_profile(L, c.profile);
  lua_setfield(L, -2, "profile");
  push_cluster(L, c.cluster);
  lua_setfield(L, -2, "cluster");
  set(L, "stages", c.stages);
  set(L, "pipelines", c.pipelines);
  set(L, "batch_size", c.batch_size);
  set_list(L, "micro_batch_sizes", c.micro_batch_sizes);
  set(L, "scheduler", c.scheduler);
  set(L, "sub_blocks", c.sub_blocks);
  set(L, "optimizer_factor", c.optimizer_factor);
  set(L, "action_overhead_ms", c.action_overhead_ms);
  set(L, "recompute", std::string(option_name(c.recompute)));
  set_list(L, "stage_speeds", c.stage_speeds);
  set_list(L, "stage_memory", c.stage_memory);
  lua_createtable(L, static_cast<int>(c.placement.size()), 0);
  for (std::size_t p = 0; p < c.placement.size(); ++p) {
    lua_createtable(L, static_cast<int>(c.placement[p].size()), 0);
    for (std::size_t s = 0; s < c.placement[p].size(); ++s) {
      lua_pushinteger(L, static_cast<lua_Integer>(c.placement[p][s]));
      lua_seti(L, -2, static_cast<lua_Integer>(s + 1));
    }
    lua_seti(L, -2, static_cast<lua_Integer>(p + 1));
  }
  lua_setfield(L, -2, "placement");
  set_options(L, c.options);
}

void push_partition(lua_State* L, const Partition& partition) {
  lua_createtable(L, 0, 1);
  lua_createtable(L, static_cast<int>(partition.cuts.size()), 0);
  for (std::size_t i = 0; i < partition.cuts.size(); ++i) {
    push_cut(L, partition.cuts[i]);
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "cuts");
}

void push_schedule_request(lua_State* L, const ScheduleRequest& r) {
  lua_createtable(L, 0, 13);
  set(L, "stages", r.stages);
  set(L, "chunks", r.chunking.chunks);
  lua_pushstring(L, to_string(r.chunking.shape));
  lua_setfield(L, -2, "shape");
  set_list(L, "micro_batch_sizes", r.micro_batch_sizes);
  set_list(L, "stage_forward_ms", r.stage_forward_ms);
  set_list(L, "stage_backward_ms", r.stage_backward_ms);
  set_list(L, "stage_forward_fixed_ms", r.stage_forward_fixed_ms);
  set_list(L, "stage_backward_fixed_ms", r.stage_backward_fixed_ms);
  set_list(L, "stage_input_gradient_share", r.stage_input_gradient_share);
  set_list(L, "send_ms", r.send_ms);
  set(L, "action_overhead_ms", r.action_overhead_ms);
  set_options(L, r.options);
}

void push_sync_request(lua_State* L, const SyncRequest& r) {
  lua_createtable(L, 0, 5);
  set(L, "stage", r.stage);
  set(L, "pipelines", r.pipelines);
  set(L, "round", r.round);
  set_list(L, "arrival_ms", r.arrival_ms);
  set_options(L, r.options);
}

Result<Partition> read_partition(lua_State* L, int index) {
  auto value = result_json(L, index);
  ACTORPIPE_TRY(value);
  auto cuts = list_or_field(*value, "cuts");
  ACTORPIPE_TRY(cuts);
  Partition partition;
  for (std::size_t i = 0; i < cuts->size(); ++i) {
    const json& cut = (*cuts)[i];
    const std::string where = "cuts[" + std::to_string(i + 1) + "]";
    if (cut.is_number()) {
      auto block = whole_number(cut, where);
      ACTORPIPE_TRY(block);
      partition.cuts.push_back({*block, 0});
      continue;
    }
    if (!cut.is_object() || !cut.contains("block"))
      return Error::bad_input(where + ": expected a block number or {block = b, sub_block = s}, found " + cut.dump());
    for (const auto& [key, unused] : cut.items())
      if (key != "block" && key != "sub_block")
        return Error::bad_input(where + ": unknown field '" + key + "' (block, sub_block)");
    auto block = whole_number(cut["block"], where + ".block");
    ACTORPIPE_TRY(block);
    std::uint64_t sub = 0;
    if (cut.contains("sub_block")) {
      auto s = whole_number(cut["sub_block"], where + ".sub_block");
      ACTORPIPE_TRY(s);
      sub = *s;
    }
    partition.cuts.push_back({*block, sub});
  }
  return partition;
}

Result<Mapping> read_mapping(lua_State* L, int index) {
  auto value = result_json(L, index);
  ACTORPIPE_TRY(value);
  auto pipelines = list_or_field(*value, "devices");
  ACTORPIPE_TRY(pipelines);
  Mapping mapping;
  for (std::size_t p = 0; p < pipelines->size(); ++p) {
    const json& stages = (*pipelines)[p];
    const std::string where = "devices[" + std::to_string(p + 1) + "]";
    if (!stages.is_array()) return Error::bad_input(where + ": expected a list of device numbers, one per stage");
    auto& row = mapping.devices.emplace_back();
    for (std::size_t s = 0; s < stages.size(); ++s) {
      auto device = whole_number(stages[s], where + "[" + std::to_string(s + 1) + "]");
      ACTORPIPE_TRY(device);
      row.push_back(*device);
    }
  }
  return mapping;
}

Result<Schedule> read_schedule(lua_State* L, int index, const std::string& source) {
  if (lua_type(L, index) == LUA_TSTRING) return parse_schedule(lua_tostring(L, index), source);
  if (lua_type(L, index) != LUA_TTABLE)
    return Error::bad_input(std::string("expected a schedule (its text or a table of its keys), found a ") +
                            luaL_typename(L, index));
  auto table = to_toml(L, index);
  ACTORPIPE_TRY(table);
  return read_schedule_table(*table, source);
}

namespace {

/// GroupScheduling's fields by their C++ names; those left out keep their defaults.
Result<GroupScheduling> read_group_scheduling(const json& item) {
  if (!item.is_object()) return Error::bad_input("scheduling: expected a table of GroupScheduling's fields");
  GroupScheduling s;
  for (const auto& [key, value] : item.items()) {
    const std::string where = "scheduling." + key;
    if (key == "pairs_above" || key == "force_every") {
      auto n = whole_number(value, where);
      ACTORPIPE_TRY(n);
      (key == "pairs_above" ? s.pairs_above : s.force_every) = *n;
      continue;
    }
    if (key == "overlap") {
      if (!value.is_boolean()) return Error::bad_input(where + ": expected true or false, found " + value.dump());
      s.overlap = value.get<bool>();
      continue;
    }
    double* field = key == "window_ms"       ? &s.window_ms
                    : key == "min_window_ms" ? &s.min_window_ms
                    : key == "max_window_ms" ? &s.max_window_ms
                    : key == "grow"          ? &s.grow
                    : key == "shrink"        ? &s.shrink
                                             : nullptr;
    if (!field)
      return Error::bad_input(
          "scheduling: unknown field '" + key +
          "' (window_ms, min_window_ms, max_window_ms, grow, shrink, pairs_above, force_every, overlap)");
    if (!value.is_number()) return Error::bad_input(where + ": expected a number, found " + value.dump());
    *field = value.get<double>();
  }
  return s;
}

} // namespace

Result<SyncRound> read_sync_round(lua_State* L, int index) {
  auto value = result_json(L, index);
  ACTORPIPE_TRY(value);
  if (!value->is_object()) return Error::bad_input("expected a table {kind = ..., groups = {...}}");
  SyncRound round;
  for (const auto& [key, item] : value->items()) {
    if (key == "kind") {
      const std::string kind = item.is_string() ? item.get<std::string>() : item.dump();
      if (kind == "allreduce_gradients")
        round.kind = SyncRound::Kind::allreduce_gradients;
      else if (kind == "average_parameters")
        round.kind = SyncRound::Kind::average_parameters;
      else if (kind == "elastic")
        round.kind = SyncRound::Kind::elastic;
      else if (kind == "scheduled_averaging")
        round.kind = SyncRound::Kind::scheduled_averaging;
      else if (kind == "parameter_server")
        round.kind = SyncRound::Kind::parameter_server;
      else if (kind == "elastic_asynchronous")
        round.kind = SyncRound::Kind::elastic_asynchronous;
      else
        return Error::bad_input("kind: '" + kind +
                                "' is not allreduce_gradients, average_parameters, elastic, scheduled_averaging, "
                                "parameter_server or elastic_asynchronous");
    } else if (key == "alpha") {
      if (!item.is_number()) return Error::bad_input("alpha: expected a number, found " + item.dump());
      round.alpha = item.get<double>();
    } else if (key == "groups") {
      if (!item.is_array()) return Error::bad_input("groups: expected a list of lists of pipelines");
      for (std::size_t g = 0; g < item.size(); ++g) {
        const std::string where = "groups[" + std::to_string(g + 1) + "]";
        if (!item[g].is_array()) return Error::bad_input(where + ": expected a list of pipeline numbers");
        auto& group = round.groups.emplace_back();
        for (std::size_t m = 0; m < item[g].size(); ++m) {
          auto pipeline = whole_number(item[g][m], where + "[" + std::to_string(m + 1) + "]");
          ACTORPIPE_TRY(pipeline);
          group.push_back(*pipeline);
        }
      }
    } else if (key == "scheduling") {
      auto scheduling = read_group_scheduling(item);
      ACTORPIPE_TRY(scheduling);
      round.scheduling = *scheduling;
    } else if (key == "staleness") {
      auto staleness = whole_number(item, "staleness");
      ACTORPIPE_TRY(staleness);
      round.staleness = *staleness;
    } else if (key == "period") {
      auto period = whole_number(item, "period");
      ACTORPIPE_TRY(period);
      if (*period == 0) return Error::bad_input("period: 0 (a pipeline moves every this many steps, at least 1)");
      round.period = *period;
    } else {
      return Error::bad_input("unknown field '" + key + "' (kind, groups, alpha, scheduling, staleness, period)");
    }
  }
  return round;
}

} // namespace actorpipe::lua
