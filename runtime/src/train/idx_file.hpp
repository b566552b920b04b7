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

/// The bytes of an IDX header of `dimensions` dimensions.
std::size_t idx_header_bytes(std::uint32_t dimensions);

/// How many bytes of data the IDX header at the start of `bytes` promises (its sizes'
/// product), checked as parse_idx() checks it; its sizes go to `shape` when given. For
/// a reader that takes in no more than that.
Result<std::size_t> idx_data_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t dimensions,
                                   const std::string& source, std::vector<std::int64_t>* shape = nullptr);

/// The array in `bytes` (a decompressed IDX file, named `source` in errors) of
/// unsigned bytes and `dimensions` dimensions. A wrong magic number, an empty first
/// dimension, sizes whose product overflows, and data shorter or longer than the
/// header says are errors that say which.
Result<IdxArray> parse_idx(const std::vector<std::uint8_t>& bytes, std::uint32_t dimensions, const std::string& source);

} // namespace actorpipe::train
