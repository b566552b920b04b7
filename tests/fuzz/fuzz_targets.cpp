#include "fuzz_targets.hpp"

#include <actorpipe/profile_io.hpp>
#include <actorpipe/schedule_io.hpp>

#include "config/cluster_config.hpp"
#include "config/job_config.hpp"
#include "config/toml_reader.hpp"
#include "config/lua_job.hpp"
#include "lua/lua_state.hpp"
#include "lua/lua_values.hpp"
#include "train/idx_file.hpp"
#include "train/npy_file.hpp"

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace actorpipe::fuzz {

namespace {

std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A broken invariant: abort, which the fuzzer and the replay test both report.
void require(bool holds) {
  if (!holds) std::abort();
}

} // namespace

void job_reader(const std::uint8_t* data, std::size_t size) {
  auto root = config::parse_toml(text_of(data, size), "fuzz/job.toml");
  if (!root) return;
  (void)config::read_job(std::move(*root), "fuzz/job.toml", {});
}

void cluster_reader(const std::uint8_t* data, std::size_t size) {
  auto root = config::parse_toml(text_of(data, size), "fuzz/cluster.toml");
  if (!root) return;
  (void)config::read_cluster(*root, "");
}

void toml_profile_reader(const std::uint8_t* data, std::size_t size) {
  (void)parse_toml_profile(text_of(data, size), "fuzz/profile.toml");
}

void pipedream_profile_reader(const std::uint8_t* data, std::size_t size) {
  (void)parse_pipedream_profile(text_of(data, size), "fuzz/graph.txt", 32);
}

void schedule_reader(const std::uint8_t* data, std::size_t size) {
  auto schedule = parse_schedule(text_of(data, size), "fuzz/schedule.toml");
  if (!schedule) return;
  // A schedule is data with a text form that parses back to it.
  auto again = parse_schedule(format_schedule(*schedule), "fuzz/formatted.toml");
  require(again.ok());
  require(again->micro_batch_sizes == schedule->micro_batch_sizes && again->stages == schedule->stages);
}

void idx_reader(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  for (std::uint32_t dimensions : {1u, 3u}) {
    auto array = train::parse_idx(bytes, dimensions, "fuzz/data-idx");
    if (!array) continue;
    std::size_t count = 1;
    for (auto n : array->shape)
      count *= static_cast<std::size_t>(n);
    require(array->shape.size() == dimensions && array->data.size() == count);
  }
}

void npy_reader(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto header = train::parse_npy_header(bytes, size, "fuzz/data.npy");
  if (!header) return;
  std::size_t count = element_size(header->type);
  for (auto n : header->shape)
    count *= static_cast<std::size_t>(n);
  // What a reader maps must lie inside the file, exactly as the header promises.
  require(header->data_bytes == count && header->data_offset + header->data_bytes == size);
}

void lua_values(const std::uint8_t* data, std::size_t size) {
  // The input is a Lua chunk whose first result is walked as scripts' values are: as
  // write_json writes it and as a Lua job's table is read. Finalisers are left out:
  // one that loops hangs lua_close, where only the watchdog (lua_test) stops it.
  const std::string text = text_of(data, size);
  if (text.find("__gc") != std::string::npos) return;
  lua::StateOptions options;
  options.call_timeout_s = 0.2;
  options.memory_limit_mib = 64;
  lua::LuaState state(options);
  lua_State* L = state.get();
  if (luaL_loadbufferx(L, text.data(), text.size(), "=fuzz/value.lua", "t") != LUA_OK) return;
  if (!state.call(0, 1)) return;
  auto json = lua::to_json(L, -1, "value");
  if (json) (void)json->dump(); // what write_json writes; its strings are UTF-8
  if (lua_type(L, -1) == LUA_TTABLE) (void)lua::job_from_table(L, -1, "fuzz/job.lua", text, {});
}

} // namespace actorpipe::fuzz
