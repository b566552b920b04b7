#include "train/checkpoint_file.hpp"

#include "base/text.hpp"

#include <torch/torch.h>
#include <zlib.h>

#include <sstream>

namespace actorpipe::train {

namespace {

constexpr std::int64_t format_version = 1;

std::int64_t crc32_of(const std::uint8_t* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes at most 4 GiB a call.
  for (std::size_t at = 0; at < size; at += std::size_t{1} << 30) {
    const std::size_t n = std::min(size - at, std::size_t{1} << 30);
    crc = crc32(crc, data + at, static_cast<uInt>(n));
  }
  return static_cast<std::int64_t>(crc);
}

} // namespace

std::string seal_checkpoint(const std::string& archive) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(archive.data());
  torch::serialize::OutputArchive sealed;
  sealed.write("format", torch::tensor(format_version));
  sealed.write("crc32", torch::tensor(crc32_of(bytes, archive.size())));
  sealed.write("archive", torch::from_blob(const_cast<std::uint8_t*>(bytes),
                                           {static_cast<std::int64_t>(archive.size())}, torch::kUInt8));
  std::ostringstream out;
  sealed.save_to(out);
  return out.str();
}

Result<std::string> unseal_checkpoint(const std::string& file, const std::string& path) {
  torch::Tensor format, crc, archive;
  try {
    torch::serialize::InputArchive sealed;
    std::istringstream in(file);
    sealed.load_from(in);
    sealed.read("format", format);
    sealed.read("crc32", crc);
    sealed.read("archive", archive);
  } catch (const std::exception& e) {
    return Error::bad_input(path + ": not an actorpipe checkpoint (" + text::message_of(e) + ")");
  }
  if (format.numel() != 1 || format.item<std::int64_t>() != format_version)
    return Error::bad_input(path + ": a checkpoint of another format than this actorpipe writes");
  if (archive.scalar_type() != torch::kUInt8 || archive.dim() != 1 || crc.numel() != 1)
    return Error::bad_input(path + ": not an actorpipe checkpoint");
  archive = archive.contiguous();
  const auto* bytes = archive.data_ptr<std::uint8_t>();
  const auto size = static_cast<std::size_t>(archive.numel());
  if (crc32_of(bytes, size) != crc.item<std::int64_t>())
    return Error::bad_input(path + ": the checkpoint is damaged (its checksum does not match its contents)");
  return std::string(reinterpret_cast<const char*>(bytes), size);
}

} // namespace actorpipe::train
