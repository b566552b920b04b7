/// Finds plugin modules (checking their info block before anything else) and Lua plugin
/// files, and instantiates their plugins on demand.

#include <actorpipe/plugin_registry.hpp>

#include <nlohmann/json.hpp>

#include "base/text.hpp"
#include "plugin/lua_plugins.hpp"
#include "plugin/install_dirs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace actorpipe {

namespace fs = std::filesystem;

namespace {

using Factory = Plugin* (*)() noexcept;

/// An open module; closed when the last plugin instance made from it is gone.
struct Module {
  void* handle = nullptr;
  ~Module() {
    if (handle) ::dlclose(handle);
  }
};

/// A plugin found: a module's factory, or a function registered in Lua or by a host.
struct Loaded {
  PluginRecord record;
  std::function<Result<std::shared_ptr<Plugin>>()> create;
};

std::optional<PluginKind> parse_kind(std::string_view kind) {
  if (kind == "partitioner") return PluginKind::partitioner;
  if (kind == "mapper") return PluginKind::mapper;
  if (kind == "scheduler") return PluginKind::scheduler;
  if (kind == "sync") return PluginKind::sync;
  if (kind == "dataset") return PluginKind::dataset;
  return std::nullopt;
}

/// The folder of the program or shared library this code is in.
fs::path own_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&own_folder), &info) == 0 || !info.dli_fname) return {};
  // For the program itself the loader reports the name it was started by, which for a
  // program found on PATH has no folder: the kernel knows the file.
  const bool program = std::string_view(info.dli_fname).find('/') == std::string_view::npos;
  std::error_code ec;
  const fs::path self = fs::canonical(program ? "/proc/self/exe" : info.dli_fname, ec);
  return ec ? fs::path{} : self.parent_path();
}

Result<Loaded> open_module(const std::string& file) {
  auto module = std::make_shared<Module>();
  module->handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module->handle) {
    const char* why = ::dlerror();
    return Error::bad_input(file + ": cannot load plugin: " + (why ? why : "unknown dlopen error"));
  }
  ::dlerror();
  const auto* info = static_cast<const PluginInfo*>(::dlsym(module->handle, plugin_info_symbol));
  if (!info)
    return Error::bad_input(file + ": not an actorpipe plugin (no '" + std::string(plugin_info_symbol) +
                            "' symbol; declare the module with ACTORPIPE_PLUGIN)");
  if (info->abi_version != plugin_abi_version)
    return Error::bad_input(file + ": plugin ABI version " + std::to_string(info->abi_version) +
                            ", but this actorpipe needs " + std::to_string(plugin_abi_version) +
                            " (rebuild the plugin against the installed headers)");
  if (!info->kind || !info->name || !info->version || !info->description)
    return Error::bad_input(file + ": plugin info block has empty fields");
  const auto kind = parse_kind(info->kind);
  if (!kind)
    return Error::bad_input(file + ": unknown plugin kind '" + std::string(info->kind) +
                            "' (partitioner, mapper, scheduler, sync or dataset)");
  if (std::string_view(info->name).empty()) return Error::bad_input(file + ": plugin has an empty name");
  auto factory = reinterpret_cast<Factory>(::dlsym(module->handle, plugin_factory_symbol));
  if (!factory)
    return Error::bad_input(file + ": plugin '" + std::string(info->name) + "' has no factory ('" +
                            std::string(plugin_factory_symbol) + "')");
  Loaded loaded;
  loaded.record = {*kind, info->name, info->version, info->description, file};
  loaded.create = [module = std::move(module), factory, record = loaded.record]() -> Result<std::shared_ptr<Plugin>> {
    Plugin* raw = factory();
    if (!raw)
      return Error::run_failed(record.file + ": " + to_string(record.kind) + " '" + record.name + "': factory failed");
    // The instance holds its module open: code must outlive the object.
    return std::shared_ptr<Plugin>(raw, [module](Plugin* p) { delete p; });
  };
  return loaded;
}

/// The plugin files a search-path entry names: the file itself, or the `.so` and `.lua`
/// files directly in the folder (not its subfolders), sorted so that discovery does not
/// depend on the file system, as absolute paths, so that the dynamic loader never
/// searches its own path for a relative name.
std::vector<std::string> modules_in(const fs::path& entry) {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path folder = fs::absolute(entry, ec);
  if (fs::is_regular_file(folder, ec)) return {folder.lexically_normal().string()};
  for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file(ec) && (it->path().extension() == ".so" || it->path().extension() == ".lua"))
      files.push_back(it->path().lexically_normal().string());
  std::sort(files.begin(), files.end());
  return files;
}

/// A module another user could replace runs their code in ours: refused, as `sudo` and
/// `ld.so` refuse an insecure path. Checked on the path with its links resolved (a link
/// in a safe folder may lead anywhere): the module must be a regular file that neither
/// its group nor any user may write, owned by this process's user or root; and every
/// folder from its own up to the root must be owned by that user or root, and writable by
/// any user only with the sticky bit (as /tmp), under which no one renames another's
/// entries.
Status check_secure(const std::string& file) {
  std::error_code ec;
  const fs::path resolved = fs::canonical(file, ec);
  if (ec) return Error::bad_input(file + ": cannot resolve the plugin's path: " + ec.message());
  const std::string via = resolved.string() == file ? file : file + " (" + resolved.string() + ")";
  const uid_t me = ::geteuid();
  struct stat info {};
  if (::stat(resolved.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return Error::bad_input(via + ": refusing to load a plugin that is not a regular file");
  if ((info.st_mode & S_IWOTH) != 0)
    return Error::bad_input(via + ": refusing to load a plugin that any user may write (chmod o-w)");
  if ((info.st_mode & S_IWGRP) != 0)
    return Error::bad_input(via + ": refusing to load a plugin that its group may write (chmod g-w)");
  if (info.st_uid != me && info.st_uid != 0)
    return Error::bad_input(via + ": refusing to load a plugin owned by another user (uid " +
                            std::to_string(info.st_uid) + ")");
  for (fs::path folder = resolved.parent_path();; folder = folder.parent_path()) {
    if (::stat(folder.c_str(), &info) != 0)
      return Error::bad_input(via + ": cannot check the folder " + folder.string() + ": " + std::strerror(errno));
    if ((info.st_mode & S_IWOTH) != 0 && (info.st_mode & S_ISVTX) == 0)
      return Error::bad_input(via + ": refusing to load a plugin from under " + folder.string() +
                              ", where any user may replace it (chmod o-w or +t)");
    if (info.st_uid != me && info.st_uid != 0)
      return Error::bad_input(via + ": refusing to load a plugin from under " + folder.string() +
                              ", which another user owns (uid " + std::to_string(info.st_uid) + ")");
    if (folder == folder.root_path() || folder.parent_path() == folder) break;
  }
  return Ok{};
}

} // namespace

const char* to_string(PluginKind kind) {
  switch (kind) {
  case PluginKind::partitioner: return "partitioner";
  case PluginKind::mapper: return "mapper";
  case PluginKind::scheduler: return "scheduler";
  case PluginKind::sync: return "sync";
  case PluginKind::dataset: return "dataset";
  }
  return "?";
}

struct PluginRegistry::Impl {
  std::vector<PluginRecord> records; ///< sorted by kind, then name
  std::map<std::pair<PluginKind, std::string>, Loaded> loaded;

  Status add(Loaded plugin) {
    const auto key = std::pair{plugin.record.kind, plugin.record.name};
    if (const auto it = loaded.find(key); it != loaded.end())
      return Error::bad_input(plugin.record.file + ": a " + std::string(to_string(key.first)) + " named '" +
                              key.second + "' is already loaded from " + it->second.record.file);
    const auto at = std::upper_bound(records.begin(), records.end(), plugin.record,
                                     [](const PluginRecord& a, const PluginRecord& b) {
                                       return std::pair{a.kind, a.name} < std::pair{b.kind, b.name};
                                     });
    records.insert(at, plugin.record);
    loaded.emplace(key, std::move(plugin));
    return Ok{};
  }
};

PluginRegistry::PluginRegistry(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PluginRegistry::PluginRegistry(PluginRegistry&&) noexcept = default;
PluginRegistry& PluginRegistry::operator=(PluginRegistry&&) noexcept = default;
PluginRegistry::~PluginRegistry() = default;

std::vector<std::string> PluginRegistry::search_path(const std::vector<std::string>& job_folders,
                                                     const std::vector<std::string>& extra) {
  std::vector<std::string> folders = default_folders();
  folders.insert(folders.end(), job_folders.begin(), job_folders.end());
  folders.insert(folders.end(), extra.begin(), extra.end());
  return folders;
}

std::vector<std::string> PluginRegistry::default_folders() {
  std::vector<std::string> folders;
  const fs::path here = own_folder();
  if (!here.empty()) {
    // The first of these that exists, for the program or library this code is in:
    //   installed library: LIBDIR/libactorpipe.so beside LIBDIR/actorpipe/plugins;
    //   installed program: BINDIR/actorpipe or LIBEXECDIR/actorpipe/actorpipe-train,
    //   plugins in LIBDIR/actorpipe/plugins;
    //   build tree: BUILD/runtime/cli/actorpipe or BUILD/tests/TEST, plugins in BUILD/plugins.
    const fs::path prefix = fs::path(here / "..").lexically_normal();
    const bool in_bindir = here.filename() == fs::path(install_dirs::bindir).filename();
    std::vector<fs::path> candidates{here / "actorpipe" / "plugins"};
    if (in_bindir) candidates.push_back(prefix / install_dirs::libdir / "actorpipe" / "plugins");
    const bool in_libexecdir = here.filename() == "actorpipe" &&
                               here.parent_path().filename() == fs::path(install_dirs::libexecdir).filename();
    if (in_libexecdir) candidates.push_back(prefix / ".." / install_dirs::libdir / "actorpipe" / "plugins");
    candidates.push_back(here.parent_path() / "plugins");
    candidates.push_back(here.parent_path().parent_path() / "plugins");
    for (const fs::path& candidate : candidates) {
      std::error_code ec;
      if (fs::is_directory(candidate, ec)) {
        folders.push_back(candidate.lexically_normal().string());
        break;
      }
    }
  }
  if (const char* env = std::getenv("ACTORPIPE_PLUGIN_PATH"))
    for (const std::string& folder : text::split(env, ':'))
      if (!folder.empty()) folders.push_back(folder);
  return folders;
}

Result<PluginRegistry> PluginRegistry::discover(const std::vector<std::string>& folders) {
  auto impl = std::make_unique<Impl>();
  std::vector<std::string> seen_files;
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (!fs::exists(folder, ec)) return Error::bad_input(folder + ": plugin folder not found");
    // A device or a pipe would yield no plugin and no word: named instead.
    if (!fs::is_directory(folder, ec) && !fs::is_regular_file(folder, ec))
      return Error::bad_input(folder + ": neither a plugin folder nor a plugin file");
    for (const std::string& file : modules_in(folder)) {
      const std::string canonical = fs::weakly_canonical(file, ec).string();
      if (std::find(seen_files.begin(), seen_files.end(), canonical) != seen_files.end()) continue;
      seen_files.push_back(canonical);
      ACTORPIPE_TRY(check_secure(file));
      if (file.ends_with(".lua")) {
        auto registered = lua::load_plugin_file(file);
        ACTORPIPE_TRY(registered);
        for (lua::LuaPlugin& plugin : *registered)
          ACTORPIPE_TRY(impl->add({std::move(plugin.record), std::move(plugin.create)}));
        continue;
      }
      auto loaded = open_module(file);
      ACTORPIPE_TRY(loaded);
      ACTORPIPE_TRY(impl->add(std::move(*loaded)));
    }
  }
  return PluginRegistry(std::move(impl));
}

Status PluginRegistry::add(PluginRecord record, std::function<Result<std::shared_ptr<Plugin>>()> create) {
  if (record.name.empty()) return Error::bad_input("a " + std::string(to_string(record.kind)) + " needs a name");
  if (!create) return Error::bad_input(std::string(to_string(record.kind)) + " '" + record.name + "': no factory");
  return impl_->add({std::move(record), std::move(create)});
}

const std::vector<PluginRecord>& PluginRegistry::plugins() const { return impl_->records; }

const PluginRecord* PluginRegistry::find(PluginKind kind, const std::string& name) const {
  const auto it = impl_->loaded.find({kind, name});
  return it == impl_->loaded.end() ? nullptr : &it->second.record;
}

Result<std::shared_ptr<Plugin>> PluginRegistry::create(PluginKind kind, const std::string& name) const {
  const auto it = impl_->loaded.find({kind, name});
  if (it == impl_->loaded.end()) {
    std::vector<std::string> names;
    for (const auto& record : impl_->records)
      if (record.kind == kind) names.push_back(record.name);
    return Error::bad_input("no " + std::string(to_string(kind)) + " named '" + name + "'" +
                            text::did_you_mean(name, names) +
                            (names.empty() ? " (none found)" : " (found: " + text::join(names, ", ") + ")"));
  }
  return it->second.create();
}

namespace {

/// The plugin as the interface its kind promises. A module's info block says the kind
/// and its factory makes the object: written by hand they may disagree, and calling an
/// object through another interface than its own would run whatever its table holds.
template <class Interface>
Result<std::shared_ptr<Interface>> as(Result<std::shared_ptr<Plugin>> plugin, const PluginRecord* record) {
  ACTORPIPE_TRY(plugin);
  if (auto typed = std::dynamic_pointer_cast<Interface>(std::move(*plugin))) return typed;
  return Error::bad_input((record ? record->file + ": plugin '" + record->name + "'" : std::string("a plugin")) +
                          " says it is a " + (record ? to_string(record->kind) : "plugin") +
                          " but its factory made another kind of object");
}

} // namespace

Result<std::shared_ptr<Partitioner>> PluginRegistry::partitioner(const std::string& name) const {
  return as<Partitioner>(create(PluginKind::partitioner, name), find(PluginKind::partitioner, name));
}
Result<std::shared_ptr<Mapper>> PluginRegistry::mapper(const std::string& name) const {
  return as<Mapper>(create(PluginKind::mapper, name), find(PluginKind::mapper, name));
}
Result<std::shared_ptr<Scheduler>> PluginRegistry::scheduler(const std::string& name) const {
  return as<Scheduler>(create(PluginKind::scheduler, name), find(PluginKind::scheduler, name));
}
Result<std::shared_ptr<SyncPolicy>> PluginRegistry::sync_policy(const std::string& name) const {
  return as<SyncPolicy>(create(PluginKind::sync, name), find(PluginKind::sync, name));
}
Result<std::shared_ptr<DataSource>> PluginRegistry::data_source(const std::string& name) const {
  return as<DataSource>(create(PluginKind::dataset, name), find(PluginKind::dataset, name));
}

std::string plugins_to_json(const PluginRegistry& registry, const std::vector<std::string>& folders) {
  nlohmann::json list = nlohmann::json::array();
  for (const PluginRecord& p : registry.plugins())
    list.push_back({{"kind", to_string(p.kind)},
                    {"name", p.name},
                    {"version", p.version},
                    {"file", p.file},
                    {"description", p.description}});
  return nlohmann::json{{"search_path", folders}, {"plugins", list}}.dump(2) + "\n";
}

} // namespace actorpipe
