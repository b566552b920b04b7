#pragma once

/// NumPy's array file (.npy, format versions 1 to 3): the magic string "\x93NUMPY", a
/// version, a header that is a Python dict literal naming the element type ('descr'),
/// the order ('fortran_order') and the shape, then the elements. Plain C++, no LibTorch,
/// so that it is fuzzed on its own (tests/fuzz); the data set maps the elements itself.

#include <actorpipe/data_array.hpp>
#include <actorpipe/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe::train {

struct NpyHeader {
  ElementType type = ElementType::float32;
  std::vector<std::int64_t> shape; ///< C order; empty for a scalar
  std::size_t data_offset = 0;     ///< where the elements start in the file
  std::size_t data_bytes = 0;      ///< the shape's product times the element's size
};

/// The most bytes a header may take: NumPy writes a few hundred.
inline constexpr std::size_t max_npy_header_bytes = 1 << 16;

/// The header at the start of `head` (the file's first bytes: at least the header,
/// or the whole file when it is shorter), checked against the file's size. A missing
/// magic string, an unknown version, a malformed dict, a type a data set cannot take
/// (big-endian, complex, strings, objects), Fortran order, sizes whose product
/// overflows, and elements cut short or followed by more are errors that say which,
/// naming `source`.
Result<NpyHeader> parse_npy_header(std::string_view head, std::size_t file_size, const std::string& source);

} // namespace actorpipe::train
