#pragma once

/// An array of numbers as data sets hand them over: what a data set plugin returns and
/// what an npy file holds, in the element types both may use.

#include <cstddef>
#include <cstring>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

namespace actorpipe {

/// NumPy's names and sizes; multi-byte elements little-endian.
enum class ElementType : std::uint8_t {
  boolean,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float16,
  float32,
  float64
};

constexpr std::size_t element_size(ElementType type) {
  switch (type) {
  case ElementType::boolean:
  case ElementType::int8:
  case ElementType::uint8: return 1;
  case ElementType::int16:
  case ElementType::uint16:
  case ElementType::float16: return 2;
  case ElementType::int32:
  case ElementType::uint32:
  case ElementType::float32: return 4;
  default: return 8;
  }
}

/// NumPy's name of the type ("float32", "uint16", "bool").
constexpr std::string_view element_type_name(ElementType type) {
  constexpr std::string_view names[] = {"bool",   "int8",  "uint8",  "int16",   "uint16",  "int32",
                                        "uint32", "int64", "uint64", "float16", "float32", "float64"};
  return names[static_cast<std::size_t>(type)];
}

/// Row-major elements of `shape` (samples first): `bytes` holds the shape's product
/// times the element's size.
struct DataArray {
  ElementType type = ElementType::float32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;

  /// `values` as an array of `shape`, of the type that matches `T` (float: float32,
  /// std::int64_t: int64, std::uint16_t: uint16, …).
  template <typename T> static DataArray of(std::vector<std::int64_t> shape, const std::vector<T>& values);
};

/// The element type of `T`, for DataArray::of.
template <typename T> constexpr ElementType element_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return ElementType::boolean;
  else if constexpr (std::is_floating_point_v<T>)
    return sizeof(T) == 4 ? ElementType::float32 : ElementType::float64;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1   ? ElementType::int8
           : sizeof(T) == 2 ? ElementType::int16
           : sizeof(T) == 4 ? ElementType::int32
                            : ElementType::int64;
  else
    return sizeof(T) == 1   ? ElementType::uint8
           : sizeof(T) == 2 ? ElementType::uint16
           : sizeof(T) == 4 ? ElementType::uint32
                            : ElementType::uint64;
}

template <typename T> DataArray DataArray::of(std::vector<std::int64_t> shape, const std::vector<T>& values) {
  static_assert(std::is_arithmetic_v<T> && (sizeof(T) <= 8) && !(std::is_floating_point_v<T> && sizeof(T) > 8),
                "DataArray::of takes bool, integers, float and double");
  DataArray a{element_type_of<T>(), std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  if constexpr (std::is_same_v<T, bool>)
    for (std::size_t i = 0; i < values.size(); ++i)
      a.bytes[i] = std::byte{values[i] ? std::uint8_t{1} : std::uint8_t{0}};
  else
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

} // namespace actorpipe
