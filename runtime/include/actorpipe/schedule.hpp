#pragma once

/// The schedule IR: what each stage does, in order, during one iteration.
///
/// A schedule is data, so it can be printed, loaded, validated and simulated before
/// a stage actor executes it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorpipe {

enum class Op : std::uint8_t { forward, backward };

/// Forward or backward of one micro-batch on one stage.
struct Action {
  Op op = Op::forward;
  std::size_t micro_batch = 0; ///< index into Plan::micro_batch_sizes
  std::uint32_t size = 0;      ///< samples in that micro-batch
  friend bool operator==(const Action&, const Action&) = default;
};

/// The actions of every stage of one pipeline, stage 0 first.
struct Schedule {
  std::string name;
  std::vector<std::vector<Action>> stages;
};

} // namespace actorpipe
