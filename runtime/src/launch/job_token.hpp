#pragma once

/// A job's secret token: a worker presents it before the coordinator accepts it. Made
/// afresh for each job, handed over in a file only its owner can read or in the
/// environment (ACTORPIPE_TOKEN), never on a command line, where `ps` shows it.

#include <actorpipe/error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace actorpipe::launch {

/// The variable a worker reads its token from when no token file is named.
inline constexpr const char* token_variable = "ACTORPIPE_TOKEN";

/// The shortest token a worker or coordinator takes: 128 bits as hex digits. Shorter
/// ones (a word, a character) are refused, naming where they came from.
inline constexpr std::size_t min_token_length = 32;

/// 256 random bits from the system's source (std::random_device), as 64 hex digits.
std::string new_token();

/// Where a job's keys sit in its tensor store (c10d's TCPStore, which checks no one):
/// under a prefix derived from its token by SHA-256, so that a client without the
/// token can name no key the job reads or writes.
std::string store_prefix(const std::string& token);

/// The token in `path` (its first line). Refused, naming the file: one that its group
/// or others may read or write, an empty or short one, one that cannot be read.
Result<std::string> read_token_file(const std::string& path);

/// A worker's token: from `file` where one is named, else from `variable`'s value
/// (getenv(token_variable)), at least min_token_length characters; an error says how to
/// give one when there is neither.
Result<std::string> worker_token(const std::optional<std::string>& file, const char* variable);

/// Whether `given` is `expected`, in time that does not depend on where they differ.
bool same_token(std::string_view given, std::string_view expected);

} // namespace actorpipe::launch
