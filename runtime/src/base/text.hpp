#pragma once

/// Small text helpers shared by config readers, reports and error messages.

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe::text {

/// The candidate closest to `word` by edit distance, or "" when none is close enough
/// to be a plausible typo.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

/// ", did you mean 'x'?" or "" — for appending to an "unknown ..." message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// "1.5 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::uint64_t bytes);

/// Fixed-point with `digits` decimals.
std::string format_fixed(double value, int digits);

std::string join(const std::vector<std::string>& parts, std::string_view separator);

std::vector<std::string> split(std::string_view s, char separator);

std::string_view trim(std::string_view s);

/// `s` as a TOML basic string, quotes and escapes included.
std::string toml_quote(std::string_view s);

/// An exception's message for a user: its first line, without the C++ backtrace that
/// LibTorch (and c10d) append to their errors' own.
std::string message_of(const std::exception& e);

} // namespace actorpipe::text
