/// `actorpipe export RUN_DIR -o FILE`: the model a run of an imported TorchScript model
/// trained, written back out as TorchScript and as a state_dict, under the names it
/// came in with.

#include "commands.hpp"

#include <actorpipe/training.hpp>

#include <iostream>
#include <memory>

namespace actorpipe::cli {

void add_export_command(CLI::App& app, Run& run) {
  struct Arguments {
    std::string run_dir, output;
  };
  auto args = std::make_shared<Arguments>();
  auto* command = app.add_subcommand("export", export_summary);
  command->add_option("run", args->run_dir, "the run's output folder (its checkpoint.pt and model.json)")->required();
  command
      ->add_option("-o,--output", args->output,
                   "the TorchScript file to write; its state_dict goes beside it as NAME.state_dict.pt")
      ->required();
  command->callback([args, &run] {
    run = [args] {
      auto exported = export_model(args->run_dir, args->output);
      if (!exported) return report(exported.error());
      std::cout << "wrote " << exported->module_file << " and " << exported->state_dict_file << ": "
                << exported->parameters << " parameters and " << exported->buffers << " buffers as trained to step "
                << exported->step << "\n";
      return 0;
    };
  });
}

} // namespace actorpipe::cli
