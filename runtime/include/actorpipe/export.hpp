#pragma once

/// ACTORPIPE_EXPORT marks the names that libactorpipe and libactorpipe_training export.
/// Both are built with hidden symbols, so everything else in them (config readers,
/// the simulator's engine, the actors) stays internal and can change without breaking
/// a plugin or a host application.

#if defined(__GNUC__) || defined(__clang__)
#define ACTORPIPE_EXPORT __attribute__((visibility("default")))
#else
#define ACTORPIPE_EXPORT
#endif
