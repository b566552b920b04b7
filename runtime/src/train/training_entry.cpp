/// Finding the training runtime's entry points: given, linked in, or loaded.

#include "training_entry.hpp"

#include <dlfcn.h>
#include <mutex>

namespace actorpipe::train {

namespace {

std::mutex mutex;
std::string library;
const TrainingEntryPoints* found = nullptr;

/// The library's file as meson names it (libactorpipe_training.so.MAJOR).
constexpr const char* soname = "libactorpipe_training.so.0";

using Getter = const TrainingEntryPoints* (*)();

} // namespace

void set_training_library(std::string path) {
  std::lock_guard lock(mutex);
  library = std::move(path);
}

void set_training_entry_points(const TrainingEntryPoints* entry_points) {
  std::lock_guard lock(mutex);
  found = entry_points;
}

Result<const TrainingEntryPoints*> training_entry_points() {
  std::lock_guard lock(mutex);
  if (found) return found;
  auto getter = reinterpret_cast<Getter>(::dlsym(RTLD_DEFAULT, training_entry_symbol));
  if (!getter) {
    const std::string file = library.empty() ? soname : library;
    // Never closed: LibTorch, once loaded, stays for the process.
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      return Error::unsupported("training needs actorpipe's training runtime, which cannot be loaded: " +
                                std::string(why ? why : file));
    }
    getter = reinterpret_cast<Getter>(::dlsym(handle, training_entry_symbol));
    if (!getter)
      return Error::unsupported(file + ": not actorpipe's training runtime (no " + std::string(training_entry_symbol) +
                                ")");
  }
  const TrainingEntryPoints* entry = getter();
  if (!entry || entry->version != training_entry_version)
    return Error::unsupported("the training runtime is of another actorpipe (entry points version " +
                              std::to_string(entry ? entry->version : 0) + ", this one needs " +
                              std::to_string(training_entry_version) + ")");
  found = entry;
  return found;
}

} // namespace actorpipe::train
