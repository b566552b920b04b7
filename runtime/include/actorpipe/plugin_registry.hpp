#pragma once

/// Finds, checks and loads plugin modules.
///
/// Search order: the plugin folder that belongs to this libactorpipe (the build tree's
/// `plugins/` or the installed `lib/actorpipe/plugins`), then every folder of
/// ACTORPIPE_PLUGIN_PATH (colon-separated), then the job's `plan.plugin_path`, then
/// `--plugin-path`. Every `*.so` found (in each folder itself, not in its subfolders)
/// must be a valid plugin module, and every `*.lua` a plugin file that registers
/// plugins written in Lua (docs/lua.md): anything else is an error naming the file.

#include <actorpipe/export.hpp>
#include <actorpipe/error.hpp>
#include <actorpipe/plugin.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe {

enum class PluginKind { partitioner, mapper, scheduler, sync, dataset };

ACTORPIPE_EXPORT const char* to_string(PluginKind kind);

struct PluginRecord {
  PluginKind kind = PluginKind::partitioner;
  std::string name;
  std::string version;
  std::string description;
  std::string file;
};

class ACTORPIPE_EXPORT PluginRegistry {
public:
  /// Reads and checks the info block of every module in `folders` (in order).
  /// Fails on the first module that is not a valid plugin, and on two modules that
  /// share a name.
  static Result<PluginRegistry> discover(const std::vector<std::string>& folders);

  /// The default folders before any job or command line adds its own: the one next
  /// to this library, then ACTORPIPE_PLUGIN_PATH.
  static std::vector<std::string> default_folders();

  /// Where a job's plugins are searched, in order: the default folders, the job's
  /// plan.plugin_path (`job_folders`), then `extra` (a command line's --plugin-path).
  static std::vector<std::string> search_path(const std::vector<std::string>& job_folders,
                                              const std::vector<std::string>& extra = {});

  PluginRegistry(PluginRegistry&&) noexcept;
  PluginRegistry& operator=(PluginRegistry&&) noexcept;
  ~PluginRegistry();

  /// Adds a plugin made in this process (a class of the host application's, a function
  /// of a Lua script): used as one found in a module. Two plugins of a kind may not
  /// share a name.
  Status add(PluginRecord record, std::function<Result<std::shared_ptr<Plugin>>()> create);

  /// Adds `Class` (a default-constructible Partitioner, Mapper, Scheduler, SyncPolicy
  /// or DataSource) as a plugin, guarded as ACTORPIPE_PLUGIN guards a module's class: an
  /// exception it throws comes back as an Error naming the call.
  template <class Class> Status add_class(std::string name, std::string version, std::string description) {
    using Guard = plugin_detail::Guard<Class>;
    const std::string_view kind = Guard::kind;
    PluginRecord record{kind == "partitioner" ? PluginKind::partitioner
                        : kind == "mapper"    ? PluginKind::mapper
                        : kind == "scheduler" ? PluginKind::scheduler
                        : kind == "sync"      ? PluginKind::sync
                                              : PluginKind::dataset,
                        std::move(name), std::move(version), std::move(description), "(added by this program)"};
    return add(std::move(record), []() -> Result<std::shared_ptr<Plugin>> {
      return std::shared_ptr<Plugin>(std::make_shared<typename Guard::type>());
    });
  }

  /// Every plugin found, sorted by kind then name.
  const std::vector<PluginRecord>& plugins() const;
  const PluginRecord* find(PluginKind kind, const std::string& name) const;

  /// Instantiates a plugin. The instance keeps its module loaded.
  Result<std::shared_ptr<Partitioner>> partitioner(const std::string& name) const;
  Result<std::shared_ptr<Mapper>> mapper(const std::string& name) const;
  Result<std::shared_ptr<Scheduler>> scheduler(const std::string& name) const;
  Result<std::shared_ptr<SyncPolicy>> sync_policy(const std::string& name) const;
  Result<std::shared_ptr<DataSource>> data_source(const std::string& name) const;

private:
  struct Impl;
  explicit PluginRegistry(std::unique_ptr<Impl> impl);
  Result<std::shared_ptr<Plugin>> create(PluginKind kind, const std::string& name) const;
  std::unique_ptr<Impl> impl_;
};

/// The plugins found and where they were looked for, as JSON: {"search_path": [...],
/// "plugins": [{"kind", "name", "version", "file", "description"}, ...]}.
ACTORPIPE_EXPORT std::string plugins_to_json(const PluginRegistry& registry, const std::vector<std::string>& folders);

} // namespace actorpipe
