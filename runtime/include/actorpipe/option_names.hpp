#pragma once

/// Options whose values are a closed set (train.optimizer = "adam") are enums past the
/// reader. Each such enum spells its values once, in a specialisation of OptionNames
/// beside it, which the job reader, reports and messages all read.

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace actorpipe {

/// Specialised for each option enum: `values`, an array of {value, spelling} pairs in
/// the order messages list them.
template <class E> struct OptionNames;

/// How a job file spells `value` ("adam").
template <class E> constexpr std::string_view option_name(E value) {
  for (const auto& [v, name] : OptionNames<E>::values)
    if (v == value) return name;
  return {};
}

/// The value `name` spells; none for a spelling the option does not have.
template <class E> constexpr std::optional<E> option_named(std::string_view name) {
  for (const auto& [v, spelling] : OptionNames<E>::values)
    if (spelling == name) return v;
  return std::nullopt;
}

} // namespace actorpipe
