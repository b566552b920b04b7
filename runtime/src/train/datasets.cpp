/// Data sets: Fashion-MNIST (gzipped IDX, read with zlib), synthetic, byte-level text,
/// token files; the choice among every kind.

#include "train/datasets.hpp"
#include "base/boundary.hpp"
#include "config/job_place.hpp"
#include "base/input_file.hpp"
#include "base/text.hpp"
#include "train/idx_file.hpp"
#include "train/npy_data.hpp"
#include "train/plugin_data.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <unistd.h>

namespace actorpipe::train {

namespace {

/// The most an IDX file of a data set may hold once decompressed: Fashion-MNIST's
/// largest is 47 MB.
constexpr std::size_t max_idx_bytes = std::size_t{1} << 31;

/// An IDX file of unsigned bytes, gzipped or not (zlib passes a plain file through).
/// Its header is read and checked first, then no more than the data it promises and one
/// byte: a small file that inflates to gigabytes is refused at that byte, not taken in.
Result<IdxArray> read_idx(const std::string& path, std::uint32_t dimensions) {
  ACTORPIPE_TRY(check_input_file(path));
  const std::unique_ptr<gzFile_s, decltype(&gzclose)> file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) return Error::bad_input(path + ": cannot open");
  std::vector<std::uint8_t> bytes;
  // Reads until `bytes` holds `wanted` bytes or the file ends; an error says why zlib could not.
  const auto read_to = [&](std::size_t wanted) -> Status {
    while (bytes.size() < wanted) {
      const std::size_t at = bytes.size();
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(wanted - at, 1 << 20));
      bytes.resize(at + chunk);
      const int n = gzread(file.get(), bytes.data() + at, chunk);
      bytes.resize(at + static_cast<std::size_t>(std::max(n, 0)));
      int code = 0;
      if (n < 0) return Error::bad_input(path + ": cannot decompress: " + gzerror(file.get(), &code));
      if (n == 0) break;
    }
    return Ok{};
  };
  ACTORPIPE_TRY(read_to(idx_header_bytes(dimensions)));
  auto data = idx_data_bytes(bytes, dimensions, path);
  ACTORPIPE_TRY(data);
  if (*data > max_idx_bytes)
    return Error::bad_input(path + ": the header promises " + std::to_string(*data) + " bytes of data; at most " +
                            std::to_string(max_idx_bytes) + " are read");
  const std::size_t whole = idx_header_bytes(dimensions) + *data;
  ACTORPIPE_TRY(read_to(whole + 1));
  if (bytes.size() > whole)
    return Error::bad_input(path + ": more follows the " + std::to_string(*data) +
                            " bytes of data the header promises");
  return parse_idx(bytes, dimensions, path);
}

Result<Split> fashion_mnist_split(const std::string& folder, const std::string& prefix) {
  const auto images = read_idx(folder + "/" + prefix + "-images-idx3-ubyte.gz", 3);
  if (!images) return images.error();
  const auto labels = read_idx(folder + "/" + prefix + "-labels-idx1-ubyte.gz", 1);
  if (!labels) return labels.error();
  const auto& [shape, pixels] = *images;
  if (labels->shape[0] != shape[0])
    return Error::bad_input(folder + "/" + prefix + "-labels-idx1-ubyte.gz: " + std::to_string(labels->shape[0]) +
                            " labels for " + std::to_string(shape[0]) + " images");
  Split split;
  auto raw =
      torch::from_blob(const_cast<std::uint8_t*>(pixels.data()), {shape[0], 1, shape[1], shape[2]}, torch::kUInt8);
  // Normalised by the training set's mean and standard deviation, in place: the
  // training images as floats are 188 MB, and each temporary would cost as much again.
  split.inputs = raw.to(torch::kFloat32).div_(255.0).sub_(0.2860).div_(0.3530);
  split.labels =
      torch::from_blob(const_cast<std::uint8_t*>(labels->data.data()), {shape[0]}, torch::kUInt8).to(torch::kLong);
  return split;
}

Result<DataSets> fashion_mnist(const DataOptions& data) {
  const std::string folder = data.path.empty() ? default_fashion_mnist : data.path;
  DataSets sets;
  auto train = fashion_mnist_split(folder, "train");
  ACTORPIPE_TRY(train);
  auto test = fashion_mnist_split(folder, "t10k");
  ACTORPIPE_TRY(test);
  sets.train = std::move(*train);
  sets.test = std::move(*test);
  sets.shape.sample = {1, sets.train.inputs.size(2), sets.train.inputs.size(3)};
  sets.shape.classes = 10;
  // Checked here, before a run writes anything: found at the first step or at the
  // evaluation after an epoch, they would cost the run.
  if (sets.test.inputs.sizes().slice(1) != sets.train.inputs.sizes().slice(1))
    return Error::bad_input(
        folder + "/t10k-images-idx3-ubyte.gz: test images of " + std::to_string(sets.test.inputs.size(2)) + " × " +
        std::to_string(sets.test.inputs.size(3)) + " pixels, training images of " +
        std::to_string(sets.train.inputs.size(2)) + " × " + std::to_string(sets.train.inputs.size(3)));
  for (const auto& [split, prefix] : {std::pair{&sets.train, "train"}, std::pair{&sets.test, "t10k"}}) {
    const std::int64_t largest = split->labels.max().item<std::int64_t>();
    if (largest >= static_cast<std::int64_t>(sets.shape.classes))
      return Error::bad_input(folder + "/" + prefix + "-labels-idx1-ubyte.gz: label " + std::to_string(largest) +
                              " is not one of the " + std::to_string(sets.shape.classes) + " classes (0-9)");
  }
  return sets;
}

/// Gaussian inputs labelled by a fixed random linear teacher: learnable, and the same
/// for the same seed.
Result<DataSets> synthetic(const DataOptions& data) {
  // Refused before LibTorch is asked for it: an allocation it cannot make aborts.
  std::int64_t features = 1;
  for (auto d : data.shape)
    if (d < 1 || __builtin_mul_overflow(features, d, &features))
      return Error::bad_key("data.shape", "its sizes multiply past what memory holds");
  const double bytes = 1.25 * static_cast<double>(data.samples) * static_cast<double>(features) * sizeof(float);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (bytes > memory / 2)
    return Error::bad_key("data.samples", std::to_string(data.samples) + " samples of " + std::to_string(features) +
                                              " features, with a test quarter, take " +
                                              text::format_fixed(bytes / (1 << 30), 1) +
                                              " GiB, more than half this machine's " +
                                              text::format_fixed(memory / (1 << 30), 1) + " GiB");
  torch::manual_seed(data.seed + 0x5eed);
  DataSets sets;
  sets.shape.sample = data.shape;
  sets.shape.classes = data.classes > 0 ? data.classes : 10;
  const auto teacher = torch::randn({features, sets.shape.classes});
  auto make = [&](std::int64_t n) {
    std::vector<std::int64_t> shape{n};
    shape.insert(shape.end(), data.shape.begin(), data.shape.end());
    Split s;
    s.inputs = torch::randn(shape);
    s.labels = torch::matmul(s.inputs.reshape({n, features}), teacher).argmax(1);
    return s;
  };
  sets.train = make(data.samples);
  sets.test = make(std::max<std::int64_t>(1, data.samples / 4));
  return sets;
}

/// Non-overlapping windows of `context` + 1 bytes: inputs are the first `context`,
/// labels the next byte of each. The last tenth of the file is the test split.
Result<DataSets> text(const DataOptions& data, const ModelOptions& model) {
  if (data.path.empty()) return Error::bad_key("data.path", "a text data set needs a file");
  ACTORPIPE_TRY(check_input_file(data.path));
  std::ifstream in(data.path, std::ios::binary);
  if (!in) return Error::bad_input(data.path + ": cannot open");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::int64_t T = model.context;
  const std::int64_t windows = static_cast<std::int64_t>(bytes.size() > 0 ? (bytes.size() - 1) / T : 0);
  if (windows < 2)
    return Error::bad_input(data.path + ": " + std::to_string(bytes.size()) + " bytes make fewer than two windows of " +
                            std::to_string(T + 1) + " bytes (model.context + 1)");
  auto all = torch::from_blob(bytes.data(), {static_cast<std::int64_t>(bytes.size())}, torch::kUInt8).to(torch::kLong);
  auto inputs = torch::empty({windows, T}, torch::kLong), labels = torch::empty({windows, T}, torch::kLong);
  for (std::int64_t w = 0; w < windows; ++w) {
    inputs[w] = all.slice(0, w * T, w * T + T);
    labels[w] = all.slice(0, w * T + 1, w * T + T + 1);
  }
  const std::int64_t test = std::max<std::int64_t>(1, windows / 10);
  DataSets sets;
  sets.train = {inputs.slice(0, 0, windows - test), labels.slice(0, 0, windows - test)};
  sets.test = {inputs.slice(0, windows - test), labels.slice(0, windows - test)};
  sets.shape.sample = {T};
  sets.shape.classes = 256;
  sets.shape.tokens = true;
  return sets;
}

/// A flat file of token ids, cut as text() cuts bytes: non-overlapping windows of
/// `context` + 1 tokens, the last tenth the test split. Ids are checked against the
/// vocabulary before anything trains on them.
Result<DataSets> tokens(const DataOptions& data, const ModelOptions& model) {
  if (data.path.empty()) return Error::bad_key("data.path", "a tokens data set needs a file");
  ACTORPIPE_TRY(check_input_file(data.path));
  std::ifstream in(data.path, std::ios::binary);
  if (!in) return Error::bad_input(data.path + ": cannot open");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool wide = data.token_type == TokenType::uint32;
  const std::size_t width = wide ? 4 : 2;
  const std::string type(option_name(data.token_type));
  if (bytes.size() % width != 0)
    return Error::bad_input(data.path + ": " + std::to_string(bytes.size()) + " bytes are not a whole number of " +
                            type + " tokens (data.token_type; a file cut short?)");
  const auto count = static_cast<std::int64_t>(bytes.size() / width);
  const std::int64_t T = model.context;
  const std::int64_t windows = count > 0 ? (count - 1) / T : 0;
  if (windows < 2)
    return Error::bad_input(data.path + ": " + std::to_string(count) + " tokens make fewer than two windows of " +
                            std::to_string(T + 1) + " tokens (model.context + 1)");
  // As the bytes lie (little-endian, as every machine this runs on), then as the ids
  // an embedding takes.
  const torch::Tensor all =
      torch::from_blob(const_cast<char*>(bytes.data()), {count}, wide ? torch::kUInt32 : torch::kUInt16)
          .to(torch::kLong);
  const std::int64_t largest = all.max().item<std::int64_t>();
  const std::int64_t vocabulary = data.vocabulary > 0 ? data.vocabulary : largest + 1;
  if (largest >= vocabulary) {
    const std::int64_t at = (all >= vocabulary).nonzero()[0][0].item<std::int64_t>();
    return Error::bad_input(data.path + ": token " + std::to_string(at) + " is " +
                            std::to_string(all[at].item<std::int64_t>()) + ", outside the vocabulary of " +
                            std::to_string(vocabulary) + " (data.vocabulary; is data.token_type \"" + type +
                            "\" the file's?)");
  }
  const torch::Tensor inputs = all.slice(0, 0, windows * T).view({windows, T});
  const torch::Tensor labels = all.slice(0, 1, windows * T + 1).view({windows, T});
  const std::int64_t test = std::max<std::int64_t>(1, windows / 10);
  DataSets sets;
  sets.train = {inputs.slice(0, 0, windows - test), labels.slice(0, 0, windows - test)};
  sets.test = {inputs.slice(0, windows - test), labels.slice(0, windows - test)};
  sets.shape.sample = {T};
  sets.shape.classes = vocabulary;
  sets.shape.tokens = true;
  return sets;
}

} // namespace

Result<DataSets> load_data(const JobSpec& job, const PluginRegistry* plugins) {
  const DataOptions& data = job.data;
  const auto loaded = [&]() -> Result<DataSets> {
    switch (data.dataset) {
    case Dataset::fashion_mnist: return fashion_mnist(data);
    case Dataset::text: return text(data, job.model);
    case Dataset::tokens: return tokens(data, job.model);
    case Dataset::npy: return npy_data(data);
    case Dataset::plugin: return plugin_data(job, plugins);
    case Dataset::synthetic: break;
    }
    return synthetic(data);
  };
  auto sets = loaded();
  if (!sets)
    return config::place_in_job(job, std::move(sets).error(),
                                data.dataset == Dataset::plugin ? "data.plugin" : "data.path");
  return sets;
}

torch::Tensor model_inputs(const torch::Tensor& stored) {
  const torch::ScalarType type =
      c10::isIntegralType(stored.scalar_type(), /*includeBool=*/false) ? torch::kLong : torch::kFloat32;
  return stored.scalar_type() == type ? stored : stored.to(type);
}

torch::Tensor model_labels(const torch::Tensor& stored) {
  return stored.scalar_type() == torch::kLong ? stored : stored.to(torch::kLong);
}

std::vector<std::int64_t> epoch_order(std::int64_t samples, std::uint64_t seed, std::uint64_t epoch, bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    std::mt19937_64 random(seed * 0x9e3779b97f4a7c15ULL + epoch);
    // Fisher–Yates with our own draws: std::shuffle's use of the engine is not fixed
    // by the standard, and orders must not change between library versions.
    for (std::size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[random() % i]);
  }
  return order;
}

} // namespace actorpipe::train

namespace actorpipe {

Result<std::shared_ptr<const TrainingData>>
train::given_or_loaded(const JobSpec& job, std::shared_ptr<const TrainingData> given, const PluginRegistry* plugins) {
  if (given) return given;
  return load_training_data(job, plugins);
}

Result<std::shared_ptr<const TrainingData>> load_training_data(const JobSpec& job, const PluginRegistry* plugins) {
  return at_boundary("loading the data", [&]() -> Result<std::shared_ptr<const TrainingData>> {
    auto sets = train::load_data(job, plugins);
    ACTORPIPE_TRY(sets);
    return std::make_shared<const TrainingData>(TrainingData{std::move(*sets)});
  });
}

} // namespace actorpipe
