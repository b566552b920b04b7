#include "train/npy_file.hpp"

#include <array>
#include <cctype>
#include <optional>

namespace actorpipe::train {

namespace {

/// NumPy's kind character (b, i, u, f) and size of each element type.
struct TypeCode {
  char kind;
  std::size_t size;
  ElementType type;
};

constexpr std::array type_codes{
    TypeCode{'b', 1, ElementType::boolean}, TypeCode{'i', 1, ElementType::int8},
    TypeCode{'u', 1, ElementType::uint8},   TypeCode{'i', 2, ElementType::int16},
    TypeCode{'u', 2, ElementType::uint16},  TypeCode{'i', 4, ElementType::int32},
    TypeCode{'u', 4, ElementType::uint32},  TypeCode{'i', 8, ElementType::int64},
    TypeCode{'u', 8, ElementType::uint64},  TypeCode{'f', 2, ElementType::float16},
    TypeCode{'f', 4, ElementType::float32}, TypeCode{'f', 8, ElementType::float64},
};

std::uint32_t little_endian(std::string_view bytes, std::size_t at, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i)
    value |= std::uint32_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return value;
}

/// One value of the header's dict: a string, a boolean or a tuple of integers.
struct Value {
  enum class Kind { string, boolean, tuple } kind = Kind::string;
  std::string text;
  bool flag = false;
  std::vector<std::int64_t> numbers;
};

/// A reader of the one Python literal NumPy writes as the header; `fail` names the file.
class DictReader {
public:
  DictReader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Error fail(const std::string& why) const {
    return Error::bad_input(source_ + ": not a NumPy array file: its header " + why);
  }

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])))
      ++at_;
  }

  /// Skips blanks, then takes `c` if it comes next.
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  Result<std::string> string() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return fail("has a key that is not a string");
    const char quote = text_[at_++];
    const std::size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) return fail("has a string without its closing quote");
    std::string s(text_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }

  Result<Value> value() {
    skip_space();
    Value v;
    if (at_ < text_.size() && (text_[at_] == '\'' || text_[at_] == '"')) {
      auto s = string();
      ACTORPIPE_TRY(s);
      v.text = std::move(*s);
      return v;
    }
    for (const auto& [word, flag] :
         {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        v.kind = Value::Kind::boolean;
        v.flag = flag;
        return v;
      }
    if (!take('(')) {
      if (at_ < text_.size() && text_[at_] == '[')
        return fail("describes a structured array (fields): a data set takes arrays of plain numbers");
      return fail("has a value that is not a string, True, False or a tuple");
    }
    v.kind = Value::Kind::tuple;
    while (!take(')')) {
      skip_space();
      std::int64_t n = 0;
      std::size_t digits = 0;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, text_[at_] - '0', &n))
          return fail("has a size too large to hold");
        ++at_;
        ++digits;
      }
      if (digits == 0) return fail("has a shape that is not a tuple of sizes");
      if (at_ < text_.size() && text_[at_] == 'L') ++at_; // as Python 2's NumPy wrote longs
      v.numbers.push_back(n);
      if (!take(',')) {
        if (!take(')')) return fail("has a shape that is not a tuple of sizes");
        break;
      }
    }
    return v;
  }

private:
  std::string_view text_;
  const std::string& source_;
  std::size_t at_ = 0;
};

Result<ElementType> type_of(const std::string& descr, const std::string& source) {
  const auto refuse = [&](const std::string& why) {
    return Error::bad_input(source + ": elements of type '" + descr + "' " + why);
  };
  if (descr.size() < 3)
    return refuse("are not plain numbers a data set takes (bool, int8 to uint64, float16 to float64)");
  const char order = descr[0];
  const char kind = descr[1];
  std::size_t size = 0;
  for (std::size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i])) || size > 64)
      return refuse("are not plain numbers a data set takes (bool, int8 to uint64, float16 to float64)");
    size = size * 10 + static_cast<std::size_t>(descr[i] - '0');
  }
  for (const TypeCode& c : type_codes)
    if (c.kind == kind && c.size == size) {
      if (order == '>' && size > 1)
        return refuse("are big-endian: save them little-endian, as a.astype(a.dtype.newbyteorder('<')) makes them");
      if (order != '<' && order != '|' && order != '=' && order != '>')
        return refuse("have an unknown byte order '" + std::string(1, order) + "'");
      return c.type;
    }
  return refuse("are not plain numbers a data set takes (bool, int8 to uint64, float16 to float64)");
}

} // namespace

Result<NpyHeader> parse_npy_header(std::string_view head, std::size_t file_size, const std::string& source) {
  constexpr std::string_view magic("\x93NUMPY", 6);
  if (head.substr(0, magic.size()) != magic)
    return Error::bad_input(source +
                            ": not a NumPy array file (it does not start with \\x93NUMPY; numpy.save writes one)");
  if (head.size() < 10) return Error::bad_input(source + ": truncated: the file ends inside its NumPy header");
  const int major = static_cast<unsigned char>(head[6]);
  if (major < 1 || major > 3)
    return Error::bad_input(source + ": NumPy array format version " + std::to_string(major) +
                            ", not one of 1 to 3 that this reads");
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (head.size() < 8 + length_bytes)
    return Error::bad_input(source + ": truncated: the file ends inside its NumPy header");
  const std::size_t header_bytes = little_endian(head, 8, length_bytes);
  if (header_bytes > max_npy_header_bytes)
    return Error::bad_input(source + ": a NumPy header of " + std::to_string(header_bytes) + " bytes; at most " +
                            std::to_string(max_npy_header_bytes) + " are read");
  NpyHeader header;
  header.data_offset = 8 + length_bytes + header_bytes;
  if (head.size() < header.data_offset)
    return Error::bad_input(source + ": truncated: the file ends inside its NumPy header");

  DictReader reader(head.substr(8 + length_bytes, header_bytes), source);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::int64_t>> shape;
  if (!reader.take('{')) return reader.fail("is not a dict");
  while (!reader.take('}')) {
    auto key = reader.string();
    ACTORPIPE_TRY(key);
    if (!reader.take(':')) return reader.fail("has a key without ':'");
    auto value = reader.value();
    ACTORPIPE_TRY(value);
    using Kind = Value::Kind;
    if (*key == "descr" && value->kind == Kind::string)
      descr = value->text;
    else if (*key == "fortran_order" && value->kind == Kind::boolean)
      fortran = value->flag;
    else if (*key == "shape" && value->kind == Kind::tuple)
      shape = value->numbers;
    else
      return reader.fail("has '" + *key + "' where descr, fortran_order and shape are expected");
    if (!reader.take(',')) {
      if (!reader.take('}')) return reader.fail("has no ',' or '}' after '" + *key + "'");
      break;
    }
  }
  if (!descr || !fortran || !shape) return reader.fail("lacks one of descr, fortran_order and shape");
  auto type = type_of(*descr, source);
  ACTORPIPE_TRY(type);
  header.type = *type;
  header.shape = std::move(*shape);
  if (*fortran && header.shape.size() > 1)
    return Error::bad_input(source +
                            ": an array in Fortran order: save numpy.ascontiguousarray(a), which is in C order");
  std::size_t bytes = element_size(header.type);
  for (std::int64_t n : header.shape)
    if (__builtin_mul_overflow(bytes, static_cast<std::size_t>(n), &bytes))
      return Error::bad_input(source + ": sizes whose product overflows");
  header.data_bytes = bytes;
  const std::size_t follow = file_size - std::min(file_size, header.data_offset);
  if (follow < bytes)
    return Error::bad_input(source + ": truncated: the header promises " + std::to_string(bytes) + " bytes of " +
                            std::string(element_type_name(header.type)) + " elements, " + std::to_string(follow) +
                            " follow");
  if (follow > bytes)
    return Error::bad_input(source + ": more follows the " + std::to_string(bytes) +
                            " bytes of elements the header promises");
  return header;
}

} // namespace actorpipe::train
