/// `actorpipe plugins`: every plugin found on the search path.

#include "commands.hpp"

#include <actorpipe/plugin_registry.hpp>

#include "base/text_table.hpp"

#include <iostream>

namespace actorpipe::cli {

void add_plugins_command(CLI::App& app, CommonOptions& common, Run& run) {
  auto* command = app.add_subcommand("plugins", "List the plugins found: kind, name, version, file, description");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "print JSON instead of a table");
  command->add_option("--plugin-path", common.plugin_path, "also search this folder or file (repeatable)");
  command->callback([&run, &common, json] {
    run = [&common, json]() -> int {
      const std::vector<std::string> folders = PluginRegistry::search_path({}, common.plugin_path);
      auto registry = PluginRegistry::discover(folders);
      if (!registry) return report(registry.error());
      if (*json) {
        std::cout << plugins_to_json(*registry, folders);
        return 0;
      }
      text::Table table({{"kind"}, {"name"}, {"version"}, {"description"}, {"file"}});
      for (const PluginRecord& p : registry->plugins())
        table.add_row({to_string(p.kind), p.name, p.version, p.description, p.file});
      std::cout << table.str();
      if (registry->plugins().empty()) std::cout << "(no plugins found)\n";
      return 0;
    };
  });
}

} // namespace actorpipe::cli
