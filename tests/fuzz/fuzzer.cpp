/// One libFuzzer executable per target of fuzz_targets.hpp; ACTORPIPE_FUZZ_TARGET names
/// it (tests/fuzz/meson.build).

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  actorpipe::fuzz::ACTORPIPE_FUZZ_TARGET(data, size);
  return 0;
}
