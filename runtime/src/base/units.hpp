#pragma once

/// Quantities with units as people write them in configs: "32 GiB", "25 Gb/s", "5 us".

#include <actorpipe/error.hpp>

#include <cstdint>
#include <string_view>

namespace actorpipe::units {

/// The largest byte count a file may give: below 2^63, so that it converts to an
/// integer without overflow and sums of a few still fit.
inline constexpr double max_bytes = 9.2e18;

/// Bytes from "512", "16 KB", "32GiB" (KB = 1000, KiB = 1024).
Result<std::uint64_t> parse_bytes(std::string_view text);

/// Bytes per second from "25 Gb/s" (bits), "16 GB/s" (bytes), "100 Mbit/s", "1e9";
/// infinity from "unlimited" (a link that takes no time, for what-if planning).
Result<double> parse_bandwidth(std::string_view text);

/// Seconds from "5 us", "1.5 ms", "2 s", "100 ns".
Result<double> parse_duration(std::string_view text);

} // namespace actorpipe::units
