/// Users' own data: npy folders and data set plugins (C++ classes, Lua functions) —
/// what they read, what they refuse before anything is written, and runs on them
/// against the single-process reference.

#define BOOST_TEST_MODULE data
#include <boost/test/unit_test.hpp>

#include "measured_plan.hpp"
#include "reference_training.hpp"
#include "test_support.hpp"

#include <actorpipe/plugin_registry.hpp>
#include <actorpipe/training.hpp>

#include "train/datasets.hpp"
#include "train/npy_file.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace actorpipe;

namespace {

/// An .npy file as numpy.save writes it (format 1.0: the header padded with spaces to
/// a multiple of 64 bytes and ended by a newline), of `values` as `T`.
template <typename T>
std::string write_npy(const std::filesystem::path& file, const std::string& descr,
                      const std::vector<std::int64_t>& shape, const std::vector<T>& values) {
  std::string dims;
  for (auto d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << out;
  return file.string();
}

/// Blobs around `classes` centres in `features` dimensions, from a fixed seed.
struct Blobs {
  std::vector<float> inputs;
  std::vector<std::int64_t> labels;
};
Blobs blobs(std::int64_t samples, std::int64_t features, std::int64_t classes, std::uint64_t seed) {
  torch::manual_seed(seed);
  const torch::Tensor centres = torch::randn({classes, features}) * 3;
  const torch::Tensor labels = torch::randint(classes, {samples}, torch::kLong);
  const torch::Tensor inputs = (centres.index_select(0, labels) + torch::randn({samples, features})).contiguous();
  Blobs b;
  b.inputs.assign(inputs.data_ptr<float>(), inputs.data_ptr<float>() + inputs.numel());
  b.labels.assign(labels.data_ptr<std::int64_t>(), labels.data_ptr<std::int64_t>() + labels.numel());
  return b;
}

std::string job_toml(const std::string& zoo, const std::string& data, std::size_t stages, std::size_t pipelines,
                     const std::string& extra_plan = "") {
  std::ostringstream t;
  t << test::cpu_cluster_toml(8, "4 GiB") << "[job]\nname = \"data\"\nseed = 3\n"
    << "[model]\nzoo = \"" << zoo << "\"\nlayers = 2\nwidth = 32\n"
    << (zoo == "gpt" ? "heads = 4\ncontext = 16\n" : "") << data
    << "[train]\nbatch_size = 16\noptimizer = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n"
    << "[plan]\npartitioner = \"uniform\"\nmapper = \"sequential\"\nscheduler = \"1f1b\"\n"
    << "stages = " << stages << "\npipelines = " << pipelines << "\nmicro_batches = 2\n"
    << extra_plan;
  return t.str();
}

std::string message(const Result<train::NpyHeader>& r) { return r ? std::string("parsed") : r.error().message; }

std::string corpus(const std::string& name) {
  std::ifstream in(test::source_root() / "tests" / "fuzz" / "corpus" / "npy_reader" / name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A data set plugin in this process: the blobs of `Blobs`, with a test split.
class BlobSource : public DataSource {
public:
  Result<DataSplits> load(const DataRequest& request) override {
    auto samples = count_option(request.options, "samples", 200, 10, 1000);
    if (!samples) return std::move(samples).error();
    const auto n = static_cast<std::int64_t>(*samples);
    const Blobs b = blobs(n + 40, 6, 3, request.seed);
    const std::vector<float> x(b.inputs.begin(), b.inputs.begin() + n * 6),
        tx(b.inputs.begin() + n * 6, b.inputs.end());
    const std::vector<std::int64_t> y(b.labels.begin(), b.labels.begin() + n), ty(b.labels.begin() + n, b.labels.end());
    return DataSplits{DataArray::of({n, 6}, x), DataArray::of({n}, y), DataArray::of({40, 6}, tx),
                      DataArray::of({40}, ty)};
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(an_npy_header_is_checked_before_its_elements_are_trusted) {
  // Files numpy.save wrote (the fuzz corpus's seeds), in formats 1 to 3.
  const std::string v1 = corpus("float32-v1");
  auto header = train::parse_npy_header(v1, v1.size(), "a.npy");
  REQUIRE_OK(header);
  BOOST_TEST((header->type == ElementType::float32));
  BOOST_TEST(header->shape == (std::vector<std::int64_t>{3, 4}));
  BOOST_TEST(header->data_offset + header->data_bytes == v1.size());
  BOOST_TEST(header->data_bytes == 48u);
  for (const auto& [file, type, shape] :
       {std::tuple{"uint16-v2", ElementType::uint16, std::vector<std::int64_t>{2, 3}},
        std::tuple{"bool-v3", ElementType::boolean, std::vector<std::int64_t>{2}},
        std::tuple{"int64-scalar", ElementType::int64, std::vector<std::int64_t>{}}}) {
    const std::string bytes = corpus(file);
    auto h = train::parse_npy_header(bytes, bytes.size(), file);
    REQUIRE_OK(h);
    BOOST_TEST((h->type == type), file);
    BOOST_TEST(h->shape == shape, file);
  }
  const auto refused = [](const std::string& file) {
    const std::string bytes = corpus(file);
    return message(train::parse_npy_header(bytes, bytes.size(), "a.npy"));
  };
  BOOST_TEST(test::contains(refused("big-endian"), "a.npy: elements of type '>f4' are big-endian"));
  BOOST_TEST(refused("fortran") ==
             "a.npy: an array in Fortran order: save numpy.ascontiguousarray(a), which is in C order");
  BOOST_TEST(test::contains(refused("complex"), "a.npy: elements of type '<c8' are not plain numbers"));
  BOOST_TEST(refused("truncated") == "a.npy: truncated: the header promises 48 bytes of float32 elements, 43 follow");
  BOOST_TEST(refused("header-cut") == "a.npy: truncated: the file ends inside its NumPy header");
  BOOST_TEST(message(train::parse_npy_header(v1 + "xy", v1.size() + 2, "a.npy")) ==
             "a.npy: more follows the 48 bytes of elements the header promises");
  BOOST_TEST(
      test::contains(message(train::parse_npy_header("PK\x03\x04 zip", 10, "a.npy")), "a.npy: not a NumPy array file"));
  std::string shapeless = v1;
  shapeless.replace(shapeless.find("'shape'"), 7, "'shope'");
  BOOST_TEST(message(train::parse_npy_header(shapeless, shapeless.size(), "a.npy")) ==
             "a.npy: not a NumPy array file: its header has 'shope' where descr, fortran_order and shape are expected");
}

BOOST_AUTO_TEST_CASE(an_npy_folder_is_mapped_in_its_own_types_and_given_to_models_as_float32_and_int64) {
  test::ScratchDir dir;
  // 50 samples of 3 × 2 float64 features, int32 labels 0-4: no test files, so the last
  // tenth (5) is the test split.
  std::vector<double> x(300);
  std::vector<std::int32_t> y(50);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = 0.25 * static_cast<double>(i);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<std::int32_t>(i % 5);
  const auto folder = dir.path() / "arrays";
  write_npy(folder / "inputs.npy", "<f8", {50, 3, 2}, x);
  write_npy(folder / "labels.npy", "<i4", {50}, y);
  auto job = load_job(dir.write("job.toml", job_toml("mlp", "[data]\ndataset = \"npy\"\npath = \"arrays\"\n", 1, 1)));
  REQUIRE_OK(job);
  auto data = train::load_data(*job);
  REQUIRE_OK(data);
  BOOST_TEST(data->train.size() == 45);
  BOOST_TEST(data->test.size() == 5);
  BOOST_TEST(data->shape.sample == (std::vector<std::int64_t>{3, 2}));
  BOOST_TEST(data->shape.classes == 5);
  BOOST_TEST(!data->shape.tokens);
  // Held as the file holds them; converted only when a model takes them.
  BOOST_TEST((data->train.inputs.scalar_type() == torch::kDouble));
  BOOST_TEST((data->train.labels.scalar_type() == torch::kInt));
  const torch::Tensor features = train::model_inputs(data->test.inputs);
  BOOST_TEST((features.scalar_type() == torch::kFloat));
  BOOST_TEST(features[4][2][1].item<float>() == 0.25f * 299);
  BOOST_TEST((train::model_labels(data->test.labels).scalar_type() == torch::kLong));
  BOOST_TEST(train::model_labels(data->test.labels)[4].item<std::int64_t>() == 4);

  // With test files, they are the test split, and data.classes bounds the labels.
  write_npy(folder / "test_inputs.npy", "<f8", {2, 3, 2}, std::vector<double>(12, 1.0));
  write_npy(folder / "test_labels.npy", "<i4", {2}, std::vector<std::int32_t>{1, 7});
  auto split = train::load_data(*job);
  REQUIRE_OK(split);
  BOOST_TEST(split->train.size() == 50);
  BOOST_TEST(split->test.size() == 2);
  BOOST_TEST(split->shape.classes == 8);
  auto bounded = load_job(
      dir.write("bounded.toml", job_toml("mlp", "[data]\ndataset = \"npy\"\npath = \"arrays\"\nclasses = 6\n", 1, 1)));
  REQUIRE_OK(bounded);
  const auto outside = train::load_data(*bounded);
  BOOST_REQUIRE(!outside);
  BOOST_TEST(
      test::contains(outside.error().message, (folder / "test_labels.npy").string() +
                                                  ": label 7 at sample 1 is not one of the 6 classes (data.classes)"),
      outside.error().message);
}

BOOST_AUTO_TEST_CASE(npy_data_trains_as_one_process_does_across_pipelines_and_for_token_ids) {
  test::ScratchDir dir;
  const Blobs b = blobs(400, 12, 4, 11);
  write_npy(dir.path() / "blobs" / "inputs.npy", "<f4", {400, 12}, b.inputs);
  write_npy(dir.path() / "blobs" / "labels.npy", "<i8", {400}, b.labels);
  // Token ids as uint16, each label the next id of a repeating sequence.
  std::vector<std::uint16_t> ids(200 * 16), next(200 * 16);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::uint16_t>((i * 7) % 23);
    next[i] = static_cast<std::uint16_t>(((i + 1) * 7) % 23);
  }
  write_npy(dir.path() / "ids" / "inputs.npy", "<u2", {200, 16}, ids);
  write_npy(dir.path() / "ids" / "labels.npy", "<u2", {200, 16}, next);
  for (const auto& [zoo, folder, pipelines] : {std::tuple{"mlp", "blobs", 2}, std::tuple{"gpt", "ids", 1}})
    BOOST_TEST_CONTEXT(zoo << " on " << folder) {
      const test::MeasuredPlan p = test::quick_plan(
          dir, job_toml(zoo, std::string("[data]\ndataset = \"npy\"\npath = \"") + folder + "\"\n", 2, pipelines));
      const std::string out = (dir.path() / ("run-" + std::string(folder))).string();
      const test::TrainedRun run = test::train_for(p, 12, out);
      BOOST_TEST(run.summary.steps == 12u);
      BOOST_TEST(std::isfinite(run.losses.back()));
      const double difference = test::relative_difference(test::checkpoint_parameters(out + "/checkpoint.pt", 2),
                                                          test::single_process(p.job, 12));
      BOOST_TEST(difference < 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(bad_npy_data_is_refused_naming_the_file_before_anything_is_written) {
  test::ScratchDir dir;
  const auto folder = dir.path() / "d";
  const std::string inputs = (folder / "inputs.npy").string(), labels = (folder / "labels.npy").string();
  const auto good = [&] {
    std::filesystem::remove_all(folder);
    write_npy(folder / "inputs.npy", "<f4", {64, 8}, std::vector<float>(512, 0.5f));
    write_npy(folder / "labels.npy", "<i8", {64}, std::vector<std::int64_t>(64, 1));
  };
  const auto refused = [&](const std::string& zoo, const std::string& data) {
    const std::string job =
        dir.write("job.toml", job_toml(zoo, "[data]\ndataset = \"npy\"\npath = \"d\"\n" + data, 2, 1));
    const std::string out = (dir.path() / "run").string();
    const auto r = test::run_cli("run " + job + " --steps 1 -o " + out);
    BOOST_TEST(r.status == 2, r.err);
    BOOST_TEST(!std::filesystem::exists(out));
    return r.err;
  };
  good();
  write_npy(folder / "labels.npy", "<f4", {64}, std::vector<float>(64, 1));
  BOOST_TEST(test::contains(refused("mlp", ""), labels + ": labels of type float, where labels are class indices"));
  good();
  write_npy(folder / "labels.npy", "<i8", {60}, std::vector<std::int64_t>(60, 1));
  BOOST_TEST(test::contains(refused("mlp", ""), labels + ": labels of shape (60,) for the 64 samples of " + inputs));
  good();
  std::vector<std::int64_t> high(64, 1);
  high[37] = 9;
  write_npy(folder / "labels.npy", "<i8", {64}, high);
  BOOST_TEST(test::contains(refused("mlp", "classes = 4\n"),
                            labels + ": label 9 at sample 37 is not one of the 4 classes (data.classes)"));
  good();
  write_npy(folder / "inputs.npy", "<f4", {64}, std::vector<float>(64, 0.5f));
  BOOST_TEST(test::contains(refused("mlp", ""), inputs + ": shape (64,): one number per sample"));
  good();
  std::vector<float> nan(512, 0.5f);
  nan[8 * 21 + 3] = std::nanf("");
  write_npy(folder / "inputs.npy", "<f4", {64, 8}, nan);
  BOOST_TEST(test::contains(refused("mlp", ""), inputs + ": sample 21 holds NaN or an infinity"));
  good();
  write_npy(folder / "test_inputs.npy", "<f4", {4, 7}, std::vector<float>(28, 0.5f));
  BOOST_TEST(test::contains(refused("mlp", ""), (folder / "test_labels.npy").string() + ": file not found, where "
                                                                                        "test_inputs.npy is there"));
  write_npy(folder / "test_labels.npy", "<i8", {4}, std::vector<std::int64_t>(4, 0));
  BOOST_TEST(test::contains(refused("mlp", ""), (folder / "test_inputs.npy").string() +
                                                    ": samples of shape (4, 7) and type float, where " + inputs +
                                                    " has (64, 8) and float"));
  good();
  {
    std::ifstream in(inputs, std::ios::binary);
    const std::string whole{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::ofstream(inputs, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 6);
  }
  BOOST_TEST(test::contains(refused("mlp", ""), inputs + ": truncated: the header promises 2048 bytes of float32 "
                                                         "elements, 2042 follow"));
  good();
  // A model that does not fit the samples names where they come from.
  BOOST_TEST(test::contains(refused("cnn", ""), "needs image samples of shape [channels, height, width], not samples "
                                                "of 8 (" +
                                                    inputs + ")"));
  std::filesystem::remove_all(folder);
  BOOST_TEST(test::contains(refused("mlp", ""), folder.string() + ": folder not found"));
}

BOOST_AUTO_TEST_CASE(a_data_set_plugin_class_gives_the_data_its_arrays_hold) {
  test::ScratchDir dir;
  auto registry = PluginRegistry::discover(PluginRegistry::search_path({}));
  REQUIRE_OK(registry);
  REQUIRE_OK(registry->add_class<BlobSource>("blob-source", "1", "blobs"));
  auto job =
      load_job(dir.write("job.toml", job_toml("mlp",
                                              "[data]\ndataset = \"plugin\"\nplugin = \"blob-source\"\nseed = 5\n"
                                              "[data.options]\nsamples = 160\n",
                                              2, 2)));
  REQUIRE_OK(job);
  auto data = train::load_data(*job, &*registry);
  REQUIRE_OK(data);
  const Blobs b = blobs(200, 6, 3, 5);
  BOOST_TEST(data->train.size() == 160);
  BOOST_TEST(data->test.size() == 40);
  BOOST_TEST(torch::equal(data->train.inputs,
                          torch::from_blob(const_cast<float*>(b.inputs.data()), {200, 6}).slice(0, 0, 160)));
  BOOST_TEST(
      torch::equal(data->test.labels,
                   torch::from_blob(const_cast<std::int64_t*>(b.labels.data()), {200}, torch::kLong).slice(0, 160)));
  // Its options are checked by the plugin; its name by the registry, with a suggestion.
  auto few = load_job(dir.write(
      "few.toml",
      job_toml("mlp", "[data]\ndataset = \"plugin\"\nplugin = \"blob-source\"\n[data.options]\nsamples = 3\n", 2, 2)));
  REQUIRE_OK(few);
  const auto refused = train::load_data(*few, &*registry);
  BOOST_REQUIRE(!refused);
  BOOST_TEST(test::contains(refused.error().message, "data set plugin 'blob-source' (added by this program): option "
                                                     "'samples': 3 is outside [10, 1000]"),
             refused.error().message);
  auto misspelt = load_job(
      dir.write("misspelt.toml", job_toml("mlp", "[data]\ndataset = \"plugin\"\nplugin = \"blob-sorce\"\n", 2, 2)));
  REQUIRE_OK(misspelt);
  const auto unknown = train::load_data(*misspelt, &*registry);
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(test::contains(unknown.error().message, "data.plugin: no dataset named 'blob-sorce', did you mean "
                                                     "'blob-source'?"),
             unknown.error().message);
  // Runs train on it as on any data, exactly as one process.
  MeasureOptions measure;
  measure.repeats = 1;
  measure.warmup = 0;
  measure.plugins = &*registry;
  const test::MeasuredPlan p = test::measure_and_plan(*job, measure);
  RunOptions options;
  options.steps = 8;
  options.output_dir = (dir.path() / "run").string();
  options.plugins = &*registry;
  auto summary = run_training(p.job, p.plan, options);
  REQUIRE_OK(summary);
  BOOST_TEST(summary->steps == 8u);
  // A plugin without a name in the job is refused where the job is read.
  const auto nameless = load_job(dir.write("nameless.toml", job_toml("mlp", "[data]\ndataset = \"plugin\"\n", 2, 2)));
  BOOST_REQUIRE(!nameless);
  BOOST_TEST(test::contains(nameless.error().message, "data.plugin"), nameless.error().message);
}

BOOST_AUTO_TEST_CASE(a_lua_data_set_plugin_on_the_plugin_path_trains_and_its_mistakes_are_named) {
  test::ScratchDir dir;
  const auto plugin = [&](const std::string& labels) {
    return dir.write("stripes.lua", "actorpipe.register_dataset('stripes', function(request)\n"
                                    "  local inputs, labels = {}, {}\n"
                                    "  local n = tonumber(request.options.points)\n"
                                    "  for i = 1, n do\n"
                                    "    local x = (i * 37 % 101) / 50 - 1\n"
                                    "    inputs[i] = {x, (i * 53 % 97) / 48 - 1}\n"
                                    "    labels[i] = " +
                                        labels +
                                        "\n"
                                        "  end\n"
                                        "  if request.options.ragged then inputs[3] = {1} end\n"
                                        "  return {inputs = inputs, labels = labels}\n"
                                        "end)\n");
  };
  const std::string file = plugin("x > 0 and 1 or 0");
  const auto job = [&](const std::string& options) {
    return dir.write(
        "job.toml",
        job_toml("mlp", "[data]\ndataset = \"plugin\"\nplugin = \"stripes\"\n[data.options]\npoints = 200\n" + options,
                 2, 1, "plugin_path = [\"stripes.lua\"]\n"));
  };
  const std::string out = (dir.path() / "run").string();
  const auto trained = test::run_cli("run " + job("") + " --steps 4 -o " + out + " --json");
  BOOST_TEST(trained.status == 0, trained.err);
  BOOST_TEST(test::contains(trained.out, "\"steps\": 4"), trained.out);
  std::filesystem::remove_all(out);
  const auto ragged = test::run_cli("run " + job("ragged = true\n") + " --steps 1 -o " + out);
  BOOST_TEST(ragged.status == 2);
  BOOST_TEST(
      test::contains(ragged.err, "data set plugin 'stripes' (" + file +
                                     ":1): returned inputs[3]: a list of 1 where the others at this depth hold 2"),
      ragged.err);
  BOOST_TEST(!std::filesystem::exists(out));
  plugin("x > 0 and 1 or 0.5");
  const auto fractional = test::run_cli("run " + job("") + " --steps 1 -o " + out);
  BOOST_TEST(fractional.status == 2);
  BOOST_TEST(test::contains(fractional.err, "is not a whole number, as int64 elements are"), fractional.err);
  plugin("x > 0 and 1 or -1");
  const auto negative = test::run_cli("run " + job("") + " --steps 1 -o " + out);
  BOOST_TEST(negative.status == 2);
  BOOST_TEST(test::contains(negative.err, "labels: a negative label at sample"), negative.err);
  BOOST_TEST(!std::filesystem::exists(out));
}
