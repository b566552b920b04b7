/// LuaState: the sandbox, the deadline and memory hook, the counting allocator and the
/// traceback handler.

#include "lua_state.hpp"

#include <lua.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace actorpipe::lua {

namespace {

constexpr const char* owner_key = "actorpipe.state";

/// Every this many instructions the hook looks at the deadline and the cancel flag:
/// about a tenth of a millisecond of Lua.
constexpr int hook_every = 10000;

/// The message handler of every protected call: the error with Lua's traceback.
int traceback(lua_State* L) {
  // A string or number is the message; a table's raw `message` field, where it has one.
  // No __tostring runs: one that errors or loops would be an error in the handler.
  const char* message = lua_tostring(L, 1);
  if (!message && lua_type(L, 1) == LUA_TTABLE) {
    lua_pushliteral(L, "message");
    lua_rawget(L, 1);
    message = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
  }
  if (!message) message = lua_pushfstring(L, "an error with a %s value and no message", luaL_typename(L, 1));
  luaL_traceback(L, L, message, 1);
  return 1;
}

/// What a sandboxed script gets in place of a function it may not call.
int refused(lua_State* L) {
  return luaL_error(L, "%s is not available to a sandboxed script (run it with --allow-io)",
                    lua_tostring(L, lua_upvalueindex(1)));
}

void refuse(lua_State* L, const char* table, const char* name) {
  const std::string full = table ? std::string(table) + "." + name : std::string(name);
  if (table) {
    if (lua_getglobal(L, table) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setglobal(L, table);
    }
  } else {
    lua_pushglobaltable(L);
  }
  lua_pushstring(L, full.c_str());
  lua_pushcclosure(L, refused, 1);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

/// `load` of text only: binary chunks can break out of any sandbox.
int load_text(lua_State* L) {
  // load(chunk [, chunkname [, mode [, env]]]): an env given as nil is an env, so the
  // arguments keep their count.
  const int given = lua_gettop(L);
  lua_settop(L, given < 3 ? 3 : given);
  lua_pushstring(L, "t");
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

void open_sandboxed(lua_State* L) {
  static const luaL_Reg safe[] = {{LUA_GNAME, luaopen_base},        {LUA_TABLIBNAME, luaopen_table},
                                  {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
                                  {LUA_UTF8LIBNAME, luaopen_utf8},  {LUA_COLIBNAME, luaopen_coroutine},
                                  {LUA_OSLIBNAME, luaopen_os}};
  for (const luaL_Reg& lib : safe) {
    luaL_requiref(L, lib.name, lib.func, 1);
    lua_pop(L, 1);
  }
  // os keeps what tells the time; what touches processes, files or the environment goes.
  for (const char* name : {"execute", "exit", "getenv", "remove", "rename", "tmpname", "setlocale"})
    refuse(L, "os", name);
  for (const char* name : {"dofile", "loadfile", "require"})
    refuse(L, nullptr, name);
  for (const char* name : {"open", "popen", "lines", "read", "write", "input", "output", "tmpfile", "close"})
    refuse(L, "io", name);
  refuse(L, "package", "loadlib");
  lua_getglobal(L, "load");
  lua_pushcclosure(L, load_text, 1);
  lua_setglobal(L, "load");
}

} // namespace

/// Lua of the state runs while alive: the watchdog watches it from then.
class LuaState::Running {
public:
  explicit Running(WatchedLimits& limits) : limits_(limits), was_running_(limits.running.load()) {
    if (!was_running_) limits_.running_since = now_ns();
    limits_.running = true;
  }
  ~Running() { limits_.running = was_running_; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

private:
  WatchedLimits& limits_;
  bool was_running_;
};

LuaState::Outside::Outside(lua_State* L) : limits_(owner(L).limits_), was_running_(limits_.running.load()) {
  limits_.running = false;
}

LuaState::Outside::~Outside() {
  if (was_running_) limits_.running_since = now_ns();
  limits_.running = was_running_;
}

void* LuaState::allocate(void* memory, void* block, std::size_t old_size, std::size_t new_size) {
  auto& m = *static_cast<Memory*>(memory);
  const std::size_t old = block ? old_size : 0; // without a block, old_size is a type
  if (new_size == 0) {
    std::free(block);
    m.used -= old;
    return nullptr;
  }
  // Refused outright only at twice the limit (one huge string.rep): Lua's own code
  // raises the error then. Below, the hook stops the code at a point where no C++
  // frame is in between, which an allocation failure raised under C++ would unwind.
  if (m.limit != 0 && new_size > old && m.used - old + new_size > 2 * m.limit) return nullptr;
  void* grown = std::realloc(block, new_size);
  if (grown) m.used = m.used - old + new_size;
  return grown;
}

/// What an error outside every protected call does: nothing can catch it.
static int panic(lua_State* L) {
  const char* message = lua_tostring(L, -1);
  std::fprintf(stderr, "actorpipe: unprotected Lua error: %s\n", message ? message : "(not a string)");
  std::abort();
}

LuaState::LuaState(const StateOptions& options) : L_(nullptr), options_(options) {
  memory_.limit = options_.memory_limit_mib << 20;
  L_ = lua_newstate(allocate, &memory_);
  if (!L_) throw std::bad_alloc();
  lua_atpanic(L_, panic);
  lua_pushlightuserdata(L_, this);
  lua_setfield(L_, LUA_REGISTRYINDEX, owner_key);
  // Generational: a plugin call's tables (a profile of a thousand blocks) die young.
  lua_gc(L_, LUA_GCGEN, 0, 0);
  if (options_.allow_io)
    luaL_openlibs(L_);
  else
    open_sandboxed(L_);
  if (options_.timeout_s > 0) {
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(options_.timeout_s));
    limit_s_ = options_.timeout_s;
  }
  limits_.cancel = options_.cancel;
  limits_.deadline =
      deadline_ ? std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_->time_since_epoch()).count() : 0;
  watched_ = std::make_unique<Watched>(limits_, "a Lua state", limit_text());
  watch();
}

std::string LuaState::limit_text() const {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", limit_s_);
  return std::string(options_.call_timeout_s > 0 ? "time limit of " : "--timeout of ") + limit + " s";
}

void LuaState::describe() { watched_->describe(file_.empty() ? "a Lua state" : file_, limit_text()); }

void LuaState::watch() {
  lua_sethook(
      L_,
      [](lua_State* L, lua_Debug*) {
        const LuaState& state = owner(L);
        const StateOptions& o = state.options_;
        const bool over_memory = state.memory_.limit != 0 && state.memory_.used > state.memory_.limit;
        if (!over_memory && !state.stop_due()) return;
        const bool cancelled = o.cancel && o.cancel->load();
        // From now on every instruction stops it: a pcall around the loop cannot
        // swallow the stop, the code around that pcall is stopped too.
        lua_sethook(L, lua_gethook(L), LUA_MASKCOUNT, 1);
        luaL_where(L, 0); // the running function's FILE:LINE
        if (cancelled) {
          lua_pushstring(L, "interrupted");
        } else if (over_memory) {
          lua_pushfstring(L, "its Lua values took more than their limit of %d MiB",
                          static_cast<int>(state.memory_.limit >> 20));
        } else {
          char limit[32]; // no std::string: the error unwinds past destructors
          std::snprintf(limit, sizeof limit, "%g", state.limit_s_);
          lua_pushfstring(
              L, o.call_timeout_s > 0 ? "stopped after its time limit of %s s" : "stopped after its --timeout of %s s",
              limit);
        }
        lua_concat(L, 2);
        lua_error(L);
      },
      LUA_MASKCOUNT, hook_every);
}

LuaState::~LuaState() {
  {
    // Finalisers run in lua_close, where no hook does: the watchdog stops one that
    // loops past the limit.
    const Running closing(limits_);
    lua_close(L_);
  }
  watched_.reset();
}

bool LuaState::stop_due() const {
  return (options_.cancel && options_.cancel->load()) || (deadline_ && std::chrono::steady_clock::now() > *deadline_);
}

LuaState& owner(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, owner_key);
  auto* state = static_cast<LuaState*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *state;
}

Status LuaState::call(int nargs, int nresults, lua_State* thread) {
  lua_State* L = thread ? thread : L_;
  if (options_.call_timeout_s > 0) {
    // Each call has its time; the hook, set to every instruction by a stop, is reset.
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(options_.call_timeout_s));
    limit_s_ = options_.call_timeout_s;
    limits_.deadline = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_->time_since_epoch()).count();
    describe();
    watch();
  }
  const int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  int status = LUA_OK;
  {
    const Running running(limits_);
    status = lua_pcall(L, nargs, nresults, base);
  }
  lua_remove(L, base);
  if (status == LUA_OK) return Ok{};
  if (status == LUA_ERRMEM) {
    // Lua calls no handler for it: the place is not known.
    lua_pop(L, 1);
    return Error::bad_input((file_.empty() ? std::string("Lua") : file_) +
                            ": not enough memory: an allocation would have taken its Lua values past twice their "
                            "limit of " +
                            std::to_string(memory_.limit >> 20) + " MiB");
  }
  std::string message = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error object is not a string";
  // A callback that yields: the C++ between it and its coroutine cannot be resumed.
  constexpr std::string_view yielded = "attempt to yield across a C-call boundary";
  if (const auto at = message.find(yielded); at != std::string::npos)
    message.insert(at + yielded.size(),
                   " (a function that actorpipe calls back, such as a run's on_step or a plugin's, cannot yield)");
  lua_pop(L, 1);
  return Error::bad_input(std::move(message));
}

Status LuaState::run_file(const std::string& path, const std::vector<std::string>& args) {
  file_ = path;
  describe();
  // Chunk names "@FILE" make Lua's messages and tracebacks say FILE:LINE.
  if (luaL_loadfilex(L_, path.c_str(), "t") != LUA_OK) {
    std::string message = lua_tostring(L_, -1);
    lua_pop(L_, 1);
    return Error::bad_input(std::move(message));
  }
  for (const std::string& arg : args)
    lua_pushstring(L_, arg.c_str());
  return call(static_cast<int>(args.size()), 1);
}

} // namespace actorpipe::lua
