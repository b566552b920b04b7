#include "train/freed_memory.hpp"

#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace actorpipe::train {

void retain_freed_memory() {
#if defined(__GLIBC__)
  // Large blocks come from the heap, not from a mapping of their own that free()
  // unmaps; and the heap's free top is never trimmed.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

} // namespace actorpipe::train
