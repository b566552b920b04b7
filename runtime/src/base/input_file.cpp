#include "base/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace actorpipe {

namespace fs = std::filesystem;

Status check_input_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  switch (status.type()) {
  case fs::file_type::regular: return Ok{};
  case fs::file_type::not_found: return Error::bad_input(path + ": file not found");
  case fs::file_type::directory: return Error::bad_input(path + ": is a folder, not a file");
  case fs::file_type::fifo: return Error::bad_input(path + ": is a FIFO, not a regular file");
  case fs::file_type::character:
  case fs::file_type::block: return Error::bad_input(path + ": is a device, not a regular file");
  case fs::file_type::socket: return Error::bad_input(path + ": is a socket, not a regular file");
  default:
    return Error::bad_input(path + ": cannot read" + (ec ? ": " + ec.message() : std::string(", not a regular file")));
  }
}

Result<std::string> read_file(const std::string& path) {
  ACTORPIPE_TRY(check_input_file(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::bad_input(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Error::bad_input(path + ": cannot read");
  return out.str();
}

} // namespace actorpipe
