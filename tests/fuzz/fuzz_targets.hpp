#pragma once

/// The parsers that read what users hand actorpipe (and the walk over Lua values that
/// scripts hand it), each as a function of raw bytes:
/// libFuzzer drives them (fuzzer.cpp, `-Dfuzz=true` with clang) and the corpus replay
/// test runs every kept input through them in each test run. A target returns
/// normally whatever the input; a crash, a sanitizer report or a broken invariant
/// (a schedule that does not parse back from its own text) is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace actorpipe::fuzz {

using Target = void (*)(const std::uint8_t* data, std::size_t size);

void job_reader(const std::uint8_t* data, std::size_t size);
void cluster_reader(const std::uint8_t* data, std::size_t size);
void toml_profile_reader(const std::uint8_t* data, std::size_t size);
void pipedream_profile_reader(const std::uint8_t* data, std::size_t size);
void schedule_reader(const std::uint8_t* data, std::size_t size);
void idx_reader(const std::uint8_t* data, std::size_t size);
void npy_reader(const std::uint8_t* data, std::size_t size);
void lua_values(const std::uint8_t* data, std::size_t size);

struct NamedTarget {
  std::string_view name; ///< also the corpus folder: tests/fuzz/corpus/NAME
  Target run;
};

inline constexpr NamedTarget targets[] = {
    {"job_reader", job_reader},
    {"cluster_reader", cluster_reader},
    {"toml_profile_reader", toml_profile_reader},
    {"pipedream_profile_reader", pipedream_profile_reader},
    {"schedule_reader", schedule_reader},
    {"idx_reader", idx_reader},
    {"npy_reader", npy_reader},
    {"lua_values", lua_values},
};

} // namespace actorpipe::fuzz
