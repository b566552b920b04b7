#include "train/npy_data.hpp"
#include "base/input_file.hpp"
#include "base/scope_exit.hpp"
#include "train/array_data.hpp"
#include "train/npy_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace actorpipe::train {

namespace {

/// The array of one .npy file over a private mapping of it: pages are read as the
/// tensor's rows are touched, and the mapping lives as long as a tensor viewing it.
/// Mapped writable and private so that LibTorch, which takes a non-const pointer,
/// could never write through to the file.
Result<torch::Tensor> map_npy(const std::string& path) {
  ACTORPIPE_TRY(check_input_file(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::bad_input(path + ": cannot open: " + std::strerror(errno));
  const ScopeExit closing([fd] { ::close(fd); }); // the mapping outlives the descriptor
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::bad_input(path + ": cannot read: " + std::strerror(errno));
  const auto size = static_cast<std::size_t>(st.st_size);
  std::string head(std::min<std::size_t>(size, 12 + max_npy_header_bytes), '\0');
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  if (got < 0) return Error::bad_input(path + ": cannot read: " + std::strerror(errno));
  head.resize(static_cast<std::size_t>(got));
  auto header = parse_npy_header(head, size, path);
  ACTORPIPE_TRY(header);
  void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (at == MAP_FAILED) return Error::bad_input(path + ": cannot map: " + std::strerror(errno));
  const std::shared_ptr<void> mapping(at, [size](void* p) { ::munmap(p, size); });
  return torch::from_blob(
      static_cast<char*>(at) + header->data_offset, header->shape, [mapping](void*) {},
      torch::TensorOptions().dtype(scalar_type(header->type)));
}

Result<NamedArrays> map_split(const std::string& folder, const std::string& prefix) {
  NamedArrays arrays;
  arrays.inputs_name = folder + "/" + prefix + "inputs.npy";
  arrays.labels_name = folder + "/" + prefix + "labels.npy";
  auto inputs = map_npy(arrays.inputs_name);
  ACTORPIPE_TRY(inputs);
  auto labels = map_npy(arrays.labels_name);
  ACTORPIPE_TRY(labels);
  arrays.inputs = std::move(*inputs);
  arrays.labels = std::move(*labels);
  return arrays;
}

} // namespace

Result<DataSets> npy_data(const DataOptions& data) {
  namespace fs = std::filesystem;
  if (data.path.empty())
    return Error::bad_key("data.path", "an npy data set needs a folder holding inputs.npy and labels.npy");
  std::error_code ec;
  if (!fs::is_directory(data.path, ec))
    return Error::bad_input(data.path + (fs::exists(data.path, ec) ? ": not a folder" : ": folder not found") +
                            " (an npy data set is a folder holding inputs.npy and labels.npy)");
  auto train = map_split(data.path, "");
  ACTORPIPE_TRY(train);
  const bool test_inputs = fs::exists(data.path + "/test_inputs.npy", ec);
  const bool test_labels = fs::exists(data.path + "/test_labels.npy", ec);
  if (test_inputs != test_labels)
    return Error::bad_input(data.path + "/" + (test_inputs ? "test_labels.npy" : "test_inputs.npy") +
                            ": file not found, where " + (test_inputs ? "test_inputs.npy" : "test_labels.npy") +
                            " is there: a test split needs both");
  std::optional<NamedArrays> test;
  if (test_inputs) {
    auto mapped = map_split(data.path, "test_");
    ACTORPIPE_TRY(mapped);
    test = std::move(*mapped);
  }
  return array_data_sets(std::move(*train), std::move(test), data);
}

} // namespace actorpipe::train
