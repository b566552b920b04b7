#include "base/process_memory.hpp"

#include <fstream>

#include <unistd.h>

namespace actorpipe {

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

} // namespace actorpipe
