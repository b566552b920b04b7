#include "train/plugin_data.hpp"
#include "train/array_data.hpp"

#include <memory>

namespace actorpipe::train {

namespace {

/// A tensor over `array`'s bytes, which `owner` keeps: the plugin's arrays are not
/// copied again.
Result<torch::Tensor> tensor_over(const DataArray& array, const std::shared_ptr<const DataSplits>& owner,
                                  const std::string& name) {
  std::size_t bytes = element_size(array.type);
  for (std::int64_t d : array.shape)
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<std::size_t>(d), &bytes))
      return Error::bad_input(name + ": a shape with a negative size, or one whose product overflows");
  if (bytes != array.bytes.size())
    return Error::bad_input(name + ": " + std::to_string(array.bytes.size()) + " bytes, where its shape of " +
                            std::string(element_type_name(array.type)) + " elements takes " + std::to_string(bytes));
  // LibTorch takes a non-const pointer; nothing writes through it (a batch is a copy).
  auto* data = const_cast<std::byte*>(array.bytes.data());
  return torch::from_blob(
      data, array.shape, [owner](void*) {}, torch::TensorOptions().dtype(scalar_type(array.type)));
}

} // namespace

Result<DataSets> plugin_data(const JobSpec& job, const PluginRegistry* plugins) {
  const DataOptions& data = job.data;
  if (data.plugin.empty()) return Error::bad_key("data.plugin", "data.dataset = \"plugin\" needs the plugin's name");
  std::optional<PluginRegistry> found;
  if (!plugins) {
    auto discovered = PluginRegistry::discover(PluginRegistry::search_path(job.plan.plugin_path));
    ACTORPIPE_TRY(discovered);
    found.emplace(std::move(*discovered));
    plugins = &*found;
  }
  const PluginRecord* record = plugins->find(PluginKind::dataset, data.plugin);
  auto source = plugins->data_source(data.plugin);
  if (!source) return Error::bad_key("data.plugin", source.error().message);
  // "(added by this program)" is a file's place in parentheses already.
  const std::string file = record ? record->file : "";
  const std::string who = "data set plugin '" + data.plugin + "'" +
                          (file.empty()          ? ""
                           : file.front() == '(' ? " " + file
                                                 : " (" + file + ")");
  DataRequest request{data.options, data.path, data.seed, job.model.context};
  auto splits = (*source)->load(request);
  if (!splits) return std::move(splits).error().with_context(who + ": ");
  const auto owner = std::make_shared<const DataSplits>(std::move(*splits));
  const auto arrays = [&](const DataArray& inputs, const DataArray& labels,
                          const std::string& prefix) -> Result<NamedArrays> {
    NamedArrays named;
    named.inputs_name = prefix + "inputs";
    named.labels_name = prefix + "labels";
    auto x = tensor_over(inputs, owner, named.inputs_name);
    ACTORPIPE_TRY(x);
    auto y = tensor_over(labels, owner, named.labels_name);
    ACTORPIPE_TRY(y);
    named.inputs = std::move(*x);
    named.labels = std::move(*y);
    return named;
  };
  const auto from_plugin = [&](Error e) { return std::move(e).with_context(who + ": "); };
  auto train = arrays(owner->inputs, owner->labels, "");
  if (!train) return from_plugin(std::move(train).error());
  std::optional<NamedArrays> test;
  if (!owner->test_inputs.shape.empty() || !owner->test_labels.shape.empty()) {
    if (owner->test_inputs.shape.empty() || owner->test_labels.shape.empty())
      return from_plugin(Error::bad_input("test_inputs and test_labels come together, or neither does"));
    auto held = arrays(owner->test_inputs, owner->test_labels, "test_");
    if (!held) return from_plugin(std::move(held).error());
    test = std::move(*held);
  }
  auto sets = array_data_sets(std::move(*train), std::move(test), data);
  if (!sets) return from_plugin(std::move(sets).error());
  sets->shape.source = who + "'s inputs";
  return sets;
}

} // namespace actorpipe::train
