#include "train/idx_file.hpp"

namespace actorpipe::train {

namespace {

std::uint32_t big_endian(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) | (std::uint32_t{bytes[at + 2]} << 8) |
         bytes[at + 3];
}

} // namespace

std::size_t idx_header_bytes(std::uint32_t dimensions) { return 4 + 4 * std::size_t{dimensions}; }

Result<std::size_t> idx_data_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t dimensions,
                                   const std::string& source, std::vector<std::int64_t>* shape) {
  const std::uint32_t magic = 0x800 + dimensions; // unsigned byte data
  const std::size_t header = idx_header_bytes(dimensions);
  if (bytes.size() < 4 || big_endian(bytes, 0) != magic)
    return Error::bad_input(source + ": not an IDX file of " + std::to_string(dimensions) +
                            " dimensions (wrong magic number)");
  if (bytes.size() < header)
    return Error::bad_input(source + ": truncated: the header of " + std::to_string(dimensions) + " dimensions needs " +
                            std::to_string(header) + " bytes, the file has " + std::to_string(bytes.size()));
  std::size_t count = 1;
  for (std::uint32_t d = 0; d < dimensions; ++d) {
    const std::uint32_t size = big_endian(bytes, 4 + 4 * std::size_t{d});
    if (size == 0)
      return Error::bad_input(source + ": dimension " + std::to_string(d) + " of the header is 0: no data");
    if (__builtin_mul_overflow(count, std::size_t{size}, &count))
      return Error::bad_input(source + ": the header's sizes multiply past what memory holds");
    if (shape) shape->push_back(size);
  }
  return count;
}

Result<IdxArray> parse_idx(const std::vector<std::uint8_t>& bytes, std::uint32_t dimensions,
                           const std::string& source) {
  IdxArray array;
  auto data = idx_data_bytes(bytes, dimensions, source, &array.shape);
  ACTORPIPE_TRY(data);
  const std::size_t header = idx_header_bytes(dimensions), count = *data;
  const std::size_t follow = bytes.size() - header;
  if (follow < count)
    return Error::bad_input(source + ": truncated: the header promises " + std::to_string(count) + " bytes of data, " +
                            std::to_string(follow) + " follow");
  if (follow > count)
    return Error::bad_input(source + ": " + std::to_string(follow - count) + " bytes follow the " +
                            std::to_string(count) + " bytes of data the header promises");
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

} // namespace actorpipe::train
