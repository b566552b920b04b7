#include "launch/tls_files.hpp"

#include "base/input_file.hpp"

#include <utility>

namespace actorpipe::launch {

Status check_tls_files(const TlsFiles& files) {
  if (!files.enabled()) return Ok{};
  for (const auto& [flag, path] : {std::pair{"--tls-certificate", &files.certificate},
                                   std::pair{"--tls-key", &files.key}, std::pair{"--tls-ca", &files.authority}}) {
    if (path->empty())
      return Error::bad_input(std::string(flag) +
                              ": missing; TLS needs --tls-certificate, --tls-key and --tls-ca together");
    if (auto readable = check_input_file(*path); !readable)
      return std::move(readable).error().with_context(std::string(flag) + ": ");
  }
  return Ok{};
}

} // namespace actorpipe::launch
