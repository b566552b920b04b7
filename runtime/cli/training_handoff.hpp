#pragma once

/// `actorpipe` plans and simulates without LibTorch, which takes most of a second to
/// load; the commands that train or measure (`run`, `profile`, and planning a zoo model
/// that has no profile yet) are `actorpipe-train`'s, the same command line linked with
/// the training runtime. This hands the whole command over to it.

#include <actorpipe/error.hpp>

#include <string>

namespace actorpipe::cli {

/// Remembers the command line, for a hand-over decided after parsing.
void remember_arguments(int argc, char** argv);

/// The training runtime's library for a script that trains (train/training_entry.hpp):
/// in a build tree, the one built beside this program; else under the installation's
/// LIBDIR.
std::string training_library();

/// Replaces this process with `actorpipe-train` and the same arguments: next to this
/// program in a build tree, or in LIBEXECDIR/actorpipe of an installation. Returns only
/// when that fails, with what went wrong.
Error hand_over_to_training();

} // namespace actorpipe::cli
