#pragma once

/// The runners actorpipe is held against: single-process LibTorch on the same model and
/// batch (one process, several threads, or one single-thread copy per core), and
/// PyTorch eager through bench/pytorch_eager.py.

#include "bench_support.hpp"

#include <actorpipe/job.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace actorpipe::bench {

/// Single-process LibTorch training `job`'s whole batch with `threads` intra-op threads.
Rate libtorch(const JobSpec& job, int threads, std::uint64_t steps);

/// `copies` single-thread trainings side by side, one per thread, exchanging nothing:
/// the sum of their rates. Free, each trains the whole batch at its own pace: what the
/// cores reach with no coordination at all. In lockstep, each trains its share of the
/// batch and all wait for the slowest after every step, as synchronous data
/// parallelism must, but average nothing: what synchronous data parallelism over these
/// cores would reach for free, paying only for one core running slower than another.
Rate libtorch_side_by_side(const JobSpec& job, unsigned copies, std::uint64_t steps, bool lockstep);

/// PyTorch eager through bench/pytorch_eager.py, with $PYTHON, else the first that
/// imports torch of the python3 the build found torch with and python3 on the PATH;
/// nullopt when none.
std::optional<Rate> pytorch(const std::string& root, int threads, std::uint32_t batch, std::uint64_t steps);

} // namespace actorpipe::bench
