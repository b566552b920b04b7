#pragma once

/// The IDX format of MNIST and Fashion-MNIST: a big-endian header (magic number, one
/// size per dimension) and the data. Plain C++, no LibTorch, so that it is fuzzed
/// on its own (tests/fuzz).

#include <actorpipe/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe::train {

/// An IDX array of unsigned bytes.
struct IdxArray {
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data; ///< row-major, shape's product of them
};

/// The array in `bytes` (a decompressed IDX file, named `source` in errors) of
/// unsigned bytes and `dimensions` dimensions. A wrong magic number, an empty first
/// dimension, sizes whose product overflows, and data shorter or longer than the
/// header says are errors that say which.
Result<IdxArray> parse_idx(const std::vector<std::uint8_t>& bytes, std::uint32_t dimensions, const std::string& source);

} // namespace actorpipe::train
