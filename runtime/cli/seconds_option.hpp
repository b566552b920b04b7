#pragma once

/// A flag that takes seconds: a finite number within bounds. CLI11's own range checks let
/// NaN through (every comparison with it is false), and an unbounded number of seconds
/// overflows the clock it becomes.

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace actorpipe::cli {

inline CLI::Validator seconds_from(double least, double most) {
  const std::string bounds = "seconds from " + CLI::detail::to_string(least) + " to " + CLI::detail::to_string(most);
  return CLI::Validator(
      [least, most, bounds](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < least || value > most)
          return "must be " + bounds + ", not " + text;
        return {};
      },
      bounds);
}

} // namespace actorpipe::cli
