/// `actorpipe profile JOB.toml [-o FILE]`: measure every block and sub-block of the
/// job's zoo model on this machine and write the profile as TOML.

#include "commands.hpp"
#include "job_arguments.hpp"
#include "profile/measurement_text.hpp"

#include <actorpipe/profile_io.hpp>
#include <actorpipe/training.hpp>

#include <iostream>

namespace actorpipe::cli {

namespace {

struct ProfileArguments {
  std::string job, output, device;
  std::vector<std::string> set;
  std::uint32_t batch_size = 0, repeats = 5;
  int threads = 0;
  int load = -1;
};

int profile_job(const ProfileArguments& a) {
  auto job = load_job(a.job, a.set);
  if (!job) return report(job.error());
  if (job->model.zoo == ZooModel::none)
    return report(Error::bad_input(job->where("model.zoo") + "the job names no model to measure (model.zoo)"));
  MeasureOptions options;
  if (a.device == "cpu") options.on = MeasureOptions::On::cpu;
  if (a.device.starts_with("cuda")) {
    options.on = MeasureOptions::On::cuda;
    options.cuda_index = a.device == "cuda" ? 0 : std::stoi(a.device.substr(5));
  }
  options.batch_size = a.batch_size;
  options.repeats = a.repeats;
  options.threads = a.threads;
  options.load = a.load;
  options.on_pass = measuring_progress();
  auto profile = measure_profile(*job, options);
  if (!profile) return report(profile.error());
  std::cerr << describe_measurement(*profile, a.repeats) << "\n";
  if (a.output.empty()) {
    std::cout << to_toml(*profile);
    return 0;
  }
  if (auto s = save_profile(*profile, a.output); !s) return report(s.error());
  std::cerr << "wrote " << a.output << "\n";
  return 0;
}

} // namespace

void add_profile_command(CLI::App& app, Run& run) {
  auto args = std::make_shared<ProfileArguments>();
  auto* command = app.add_subcommand("profile", profile_summary);
  command->add_option("job", args->job, "the job file")->required();
  command->add_option("-o,--output", args->output, "write the profile here (default: print it)");
  command->add_option("--set", args->set, "override any job key (repeatable)");
  command
      ->add_option("--device", args->device,
                   "cpu, cuda or cuda:N (default: where the job's stages compute, its cluster's first GPU where this "
                   "machine has it, else the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}) |
              CLI::Validator(
                  [](const std::string& v) {
                    const bool ok = v.size() > 5 && v.starts_with("cuda:") &&
                                    v.find_first_not_of("0123456789", 5) == std::string::npos && v.size() < 9;
                    return ok ? std::string() : "cpu, cuda or cuda:N";
                  },
                  "cuda:N"));
  command->add_option("--batch-size", args->batch_size, "samples per measurement (default: train.batch_size)");
  command->add_option("--repeats", args->repeats, "timed passes over the model; each unit's median counts")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--threads", args->threads,
                   "LibTorch threads to measure with (default: one device's share of the cores)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--load", args->load,
                   "copies of the model kept busy on the other cores while measuring, as the other devices "
                   "compute in a run (default: enough to fill every core; 0: idle cores)")
      ->check(CLI::NonNegativeNumber);
  command->callback([&run, args] { run = [args] { return profile_job(*args); }; });
}

} // namespace actorpipe::cli
