#pragma once

/// Sets of cores as Linux writes them (`0-3,8`: `taskset -c`, cpusets, the
/// Cpus_allowed_list of /proc/PID/status), and the even shares of a machine's cores
/// that `actorpipe launch` binds its workers to.

#include <actorpipe/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace actorpipe::launch {

/// The most cores a set holds: a core's number is below it (the kernel's cpu_set_t).
inline constexpr int core_limit = 1024;

/// Reads a list such as `0-3,8` into its cores, ascending, each once. `what` names the
/// flag it came from in the error.
Result<std::vector<int>> parse_core_list(std::string_view text, std::string_view what);

/// The list parse_core_list() reads back, consecutive cores as ranges (`0-3,8`).
std::string core_list_text(const std::vector<int>& cores);

/// Share `k` of `shares` even shares of `cores` (ascending): consecutive runs whose sizes
/// differ by one at most, so that processes on one machine keep out of each other's
/// cores. With more shares than cores, one core each, consecutive shares on one core:
/// consecutive workers hold a pipeline's neighbouring stages (launch::place_stages), which
/// then take turns on it, as one process binds its stage actors (train::shared_core()).
std::vector<int> even_share(const std::vector<int>& cores, std::size_t k, std::size_t shares);

} // namespace actorpipe::launch
