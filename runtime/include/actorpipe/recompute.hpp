#pragma once

/// What a stage keeps of a micro-batch between its forward and its backward
/// (plan.recompute): everything its backward needs (none); its input alone, running its
/// forward again before the backward (full); or its input and what all but its cheap,
/// memory-heavy units keep, running those again (selective; recomputed_units(), plan.hpp).
/// Recomputing trades a forward's time for the activations.

#include <actorpipe/option_names.hpp>

#include <cstdint>

namespace actorpipe {

enum class Recompute : std::uint8_t { none, full, selective };
template <> struct OptionNames<Recompute> {
  static constexpr std::array values{std::pair{Recompute::none, std::string_view("none")},
                                     std::pair{Recompute::full, std::string_view("full")},
                                     std::pair{Recompute::selective, std::string_view("selective")}};
};

} // namespace actorpipe
