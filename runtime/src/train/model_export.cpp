/// export_model(): a run's checkpoint put back into the TorchScript module it trained.

#include "train/model_export.hpp"

#include "base/atomic_file.hpp"
#include "base/boundary.hpp"
#include "base/input_file.hpp"
#include "base/sha256.hpp"
#include "train/checkpoint_file.hpp"
#include "train/model_zoo.hpp"

#include <actorpipe/training.hpp>

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/script.h>

#include <filesystem>
#include <sstream>

namespace actorpipe {

namespace {

/// The checkpoint's tensors of every stage in order ("p" parameters or "b" buffers):
/// the model's, in the order of its units, whatever the plan's cuts were.
std::vector<torch::Tensor> stage_tensors(torch::serialize::InputArchive& archive, const char* key) {
  std::vector<torch::Tensor> out;
  for (std::size_t s = 0;; ++s) {
    torch::serialize::InputArchive stage;
    if (!archive.try_read("stage" + std::to_string(s), stage)) break;
    for (std::size_t i = 0;; ++i) {
      torch::Tensor t;
      if (!stage.try_read(key + std::to_string(i), t)) break;
      out.push_back(t);
    }
  }
  return out;
}

/// Copies `from` into `into`, one by one; an error where the counts or shapes differ.
Status copy_into(const std::vector<torch::Tensor>& from, const std::vector<std::string>& names,
                 const std::vector<torch::Tensor>& into, const std::string& what, const std::string& checkpoint) {
  if (from.size() != into.size())
    return Error::bad_input(checkpoint + ": it holds " + std::to_string(from.size()) + " " + what + ", the model " +
                            std::to_string(into.size()) + ": a checkpoint of another model");
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < into.size(); ++i) {
    if (!from[i].sizes().equals(into[i].sizes()))
      return Error::bad_input(checkpoint + ": its " + what + " " + std::to_string(i) + " is " +
                              c10::str(from[i].sizes()) + ", the model's '" + names[i] + "' " +
                              c10::str(into[i].sizes()) + ": a checkpoint of another model");
    into[i].copy_(from[i]);
  }
  return Ok{};
}

/// Name → tensor as torch.save writes a state_dict (the zip archive torch.load reads),
/// by LibTorch's own pickler and archive writer. The dict goes untagged: torch::pickle_save
/// tags it with its TorchScript type, which torch.load refuses under weights_only.
std::string state_dict_bytes(const std::vector<std::string>& parameter_names,
                             const std::vector<torch::Tensor>& parameters, const std::vector<std::string>& buffer_names,
                             const std::vector<torch::Tensor>& buffers) {
  c10::Dict<std::string, torch::Tensor> state;
  for (std::size_t i = 0; i < parameters.size(); ++i)
    state.insert(parameter_names[i], parameters[i].detach());
  for (std::size_t i = 0; i < buffers.size(); ++i)
    state.insert(buffer_names[i], buffers[i]);
  std::string pickled;
  torch::jit::Pickler pickler([&](const char* bytes, std::size_t size) { pickled.append(bytes, size); }, nullptr,
                              nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  std::string archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, std::size_t size) {
      archive.append(static_cast<const char*>(bytes), size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
  }
  return archive;
}

Result<ExportedModel> export_unguarded(const std::string& run_dir, const std::string& out) {
  const std::string record_path = run_dir + "/" + train::model_record_file;
  if (!std::filesystem::exists(record_path))
    return Error::bad_input(run_dir + ": no " + std::string(train::model_record_file) +
                            ": only a run of an imported TorchScript model (model.zoo = \"torchscript\") can be "
                            "exported, and it records its model there");
  auto record_text = read_file(record_path);
  ACTORPIPE_TRY(record_text);
  nlohmann::json record;
  try {
    record = nlohmann::json::parse(*record_text);
    record.at("file").get<std::string>();
    record.at("sha256").get<std::string>();
  } catch (const std::exception& e) {
    return Error::bad_input(record_path + ": not a model record (" + std::string(e.what()) + ")");
  }
  const std::string file = record["file"];
  auto bytes = read_file(file);
  if (!bytes) return Error::bad_input(record_path + ": the model it names, " + file + ", cannot be read");
  if (sha256_hex(*bytes) != record["sha256"].get<std::string>())
    return Error::bad_input(file + ": changed since the run in " + run_dir + " trained it (its SHA-256 differs)");

  const std::string checkpoint_path = run_dir + "/" + std::string(checkpoint_file);
  auto sealed = read_file(checkpoint_path);
  if (!sealed) return Error::bad_input(run_dir + ": no " + std::string(checkpoint_file) + " to export");
  auto archive_bytes = train::unseal_checkpoint(*sealed, checkpoint_path);
  ACTORPIPE_TRY(archive_bytes);

  ModelOptions options;
  options.zoo = ZooModel::torchscript;
  options.file = file;
  auto model = train::build_model(options, train::DataShape{}, 0);
  ACTORPIPE_TRY(model);
  std::vector<torch::Tensor> parameters, buffers;
  std::vector<std::string> parameter_names, buffer_names;
  for (const auto& p : model->script->named_parameters()) {
    parameter_names.push_back(p.name);
    parameters.push_back(p.value);
  }
  for (const auto& b : model->script->named_buffers()) {
    buffer_names.push_back(b.name);
    buffers.push_back(b.value);
  }
  torch::serialize::InputArchive archive;
  std::istringstream in(*archive_bytes);
  archive.load_from(in);
  torch::Tensor step;
  archive.read("step", step);
  ACTORPIPE_TRY(copy_into(stage_tensors(archive, "p"), parameter_names, parameters, "parameters", checkpoint_path));
  ACTORPIPE_TRY(copy_into(stage_tensors(archive, "b"), buffer_names, buffers, "buffers", checkpoint_path));

  ExportedModel exported;
  exported.module_file = out;
  exported.state_dict_file =
      (out.size() > 3 && out.ends_with(".pt") ? out.substr(0, out.size() - 3) : out) + ".state_dict.pt";
  exported.step = static_cast<std::uint64_t>(step.item<std::int64_t>());
  exported.parameters = parameters.size();
  exported.buffers = buffers.size();
  model->script->eval();
  std::ostringstream module_bytes;
  model->script->save(module_bytes);
  ACTORPIPE_TRY(write_file_atomically(exported.module_file, module_bytes.str()));
  ACTORPIPE_TRY(write_file_atomically(exported.state_dict_file,
                                      state_dict_bytes(parameter_names, parameters, buffer_names, buffers)));
  return exported;
}

} // namespace

Status train::write_model_record(const JobSpec& job, const std::string& run_dir) {
  if (job.model.zoo != ZooModel::torchscript) return Ok{};
  auto bytes = read_file(job.model.file);
  ACTORPIPE_TRY(bytes);
  const nlohmann::json record{{"file", std::filesystem::absolute(job.model.file).lexically_normal().string()},
                              {"sha256", sha256_hex(*bytes)}};
  return write_file_atomically(run_dir + "/" + model_record_file, record.dump(2) + "\n");
}

Result<ExportedModel> export_model(const std::string& run_dir, const std::string& out) {
  return at_boundary("exporting " + run_dir, [&] { return export_unguarded(run_dir, out); });
}

} // namespace actorpipe
