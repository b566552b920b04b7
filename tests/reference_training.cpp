#include "reference_training.hpp"

#include "test_support.hpp"

#include "base/input_file.hpp"
#include "train/checkpoint_file.hpp"
#include "train/single_process.hpp"

#include <sstream>

namespace actorpipe::test {

std::vector<torch::Tensor> checkpoint_parameters(const std::string& path, std::size_t stages) {
  auto file = read_file(path);
  REQUIRE_OK(file);
  auto content = train::unseal_checkpoint(*file, path);
  REQUIRE_OK(content);
  torch::serialize::InputArchive archive;
  std::istringstream bytes(*content);
  archive.load_from(bytes);
  std::vector<torch::Tensor> out;
  for (std::size_t s = 0; s < stages; ++s) {
    torch::serialize::InputArchive stage;
    archive.read("stage" + std::to_string(s), stage);
    for (std::size_t i = 0;; ++i) {
      torch::Tensor t;
      if (!stage.try_read("p" + std::to_string(i), t)) break;
      out.push_back(t);
    }
  }
  return out;
}

std::vector<torch::Tensor> single_process(const JobSpec& job, std::uint64_t steps) {
  auto reference = train::SingleProcessTraining::open(job);
  REQUIRE_OK(reference);
  for (std::uint64_t step = 0; step < steps; ++step)
    (*reference)->step();
  return (*reference)->parameters();
}

double relative_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_REQUIRE(a[i].sizes() == b[i].sizes());
    const double scale = std::max(b[i].norm().item<double>(), 1e-12);
    worst = std::max(worst, (a[i] - b[i]).norm().item<double>() / scale);
  }
  return worst;
}

} // namespace actorpipe::test
