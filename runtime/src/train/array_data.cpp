#include "train/array_data.hpp"

#include <algorithm>

namespace actorpipe::train {

namespace {

std::string shape_text(const torch::Tensor& t) {
  std::string out = "(";
  for (std::int64_t i = 0; i < t.dim(); ++i)
    out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + (t.dim() == 1 ? ",)" : ")");
}

std::string type_text(const torch::Tensor& t) {
  std::string name(c10::toString(t.scalar_type()));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

bool is_integer(const torch::Tensor& t) { return c10::isIntegralType(t.scalar_type(), /*includeBool=*/false); }

/// Visits `t` a slab of rows at a time, as int64 (or float64 for features): a mapped
/// file is read once and never held whole in another type.
template <typename Visit> Status by_slabs(const torch::Tensor& t, torch::ScalarType as, Visit visit) {
  const std::int64_t row = std::max<std::int64_t>(1, t.numel() / std::max<std::int64_t>(1, t.size(0)));
  const std::int64_t rows = std::max<std::int64_t>(1, (std::int64_t{1} << 22) / row);
  for (std::int64_t at = 0; at < t.size(0); at += rows) {
    const std::int64_t n = std::min(rows, t.size(0) - at);
    ACTORPIPE_TRY(visit(t.narrow(0, at, n).to(as), at));
  }
  return Ok{};
}

/// The first sample (by index) whose row of `slab` satisfies `bad`, as its index in the split.
std::int64_t first_sample(const torch::Tensor& bad, std::int64_t at) {
  return at + bad.reshape({bad.size(0), -1}).any(1).nonzero()[0][0].item<std::int64_t>();
}

Status check_split(const NamedArrays& a) {
  if (a.inputs.dim() < 2)
    return Error::bad_input(a.inputs_name + ": shape " + shape_text(a.inputs) +
                            ": one number per sample, where each sample needs a shape of its own (save "
                            "a.reshape(-1, 1) for one feature)");
  if (a.inputs.size(0) == 0)
    return Error::bad_input(a.inputs_name + ": no samples (shape " + shape_text(a.inputs) + ")");
  if (!is_integer(a.labels))
    return Error::bad_input(a.labels_name + ": labels of type " + type_text(a.labels) +
                            ", where labels are class indices of an integer type (save a.astype(numpy.int64))");
  if (a.labels.dim() == 0 || a.labels.size(0) != a.inputs.size(0))
    return Error::bad_input(a.labels_name + ": labels of shape " + shape_text(a.labels) + " for the " +
                            std::to_string(a.inputs.size(0)) + " samples of " + a.inputs_name);
  const bool per_position = is_integer(a.inputs) && a.labels.sizes().slice(1) == a.inputs.sizes().slice(1);
  if (a.labels.dim() > 1 && !per_position)
    return Error::bad_input(a.labels_name + ": labels of shape " + shape_text(a.labels) +
                            ": one label a sample, shape (" + std::to_string(a.inputs.size(0)) +
                            ",), or, for token ids, one a position, shaped as " + a.inputs_name + " is " +
                            shape_text(a.inputs));
  return Ok{};
}

Status check_like(const NamedArrays& test, const NamedArrays& train) {
  if (test.inputs.sizes().slice(1) != train.inputs.sizes().slice(1) ||
      is_integer(test.inputs) != is_integer(train.inputs))
    return Error::bad_input(test.inputs_name + ": samples of shape " + shape_text(test.inputs) + " and type " +
                            type_text(test.inputs) + ", where " + train.inputs_name + " has " +
                            shape_text(train.inputs) + " and " + type_text(train.inputs));
  if (test.labels.dim() != train.labels.dim())
    return Error::bad_input(test.labels_name + ": labels of shape " + shape_text(test.labels) + ", where " +
                            train.labels_name + " has " + shape_text(train.labels));
  return Ok{};
}

/// The largest label of both splits, after checking that none is negative.
Result<std::int64_t> largest_label(const std::vector<const NamedArrays*>& splits) {
  std::int64_t largest = 0;
  for (const NamedArrays* s : splits)
    ACTORPIPE_TRY(by_slabs(s->labels, torch::kLong, [&](const torch::Tensor& slab, std::int64_t at) -> Status {
      if (slab.min().item<std::int64_t>() < 0)
        return Error::bad_input(s->labels_name + ": a negative label at sample " +
                                std::to_string(first_sample(slab < 0, at)) + " (labels are class indices from 0)");
      largest = std::max(largest, slab.max().item<std::int64_t>());
      return Ok{};
    }));
  return largest;
}

Status check_labels_below(const NamedArrays& s, std::int64_t classes, bool given) {
  return by_slabs(s.labels, torch::kLong, [&](const torch::Tensor& slab, std::int64_t at) -> Status {
    if (slab.max().item<std::int64_t>() < classes) return Ok{};
    const std::int64_t sample = first_sample(slab >= classes, at);
    return Error::bad_input(s.labels_name + ": label " + std::to_string(slab[sample - at].max().item<std::int64_t>()) +
                            " at sample " + std::to_string(sample) + " is not one of the " + std::to_string(classes) +
                            " classes" + (given ? " (data.classes)" : ""));
  });
}

Status check_ids(const NamedArrays& s, std::int64_t vocabulary) {
  return by_slabs(s.inputs, torch::kLong, [&](const torch::Tensor& slab, std::int64_t at) -> Status {
    if (slab.min().item<std::int64_t>() < 0)
      return Error::bad_input(s.inputs_name + ": a negative token id at sample " +
                              std::to_string(first_sample(slab < 0, at)));
    if (vocabulary > 0 && slab.max().item<std::int64_t>() >= vocabulary) {
      const std::int64_t sample = first_sample(slab >= vocabulary, at);
      return Error::bad_input(s.inputs_name + ": token id " +
                              std::to_string(slab[sample - at].max().item<std::int64_t>()) + " at sample " +
                              std::to_string(sample) + " is outside the vocabulary of " + std::to_string(vocabulary) +
                              " (data.vocabulary)");
    }
    return Ok{};
  });
}

Status check_finite(const NamedArrays& s) {
  return by_slabs(s.inputs, torch::kDouble, [&](const torch::Tensor& slab, std::int64_t at) -> Status {
    const torch::Tensor bad = slab.isfinite().logical_not();
    if (!bad.any().item<bool>()) return Ok{};
    return Error::bad_input(s.inputs_name + ": sample " + std::to_string(first_sample(bad, at)) +
                            " holds NaN or an infinity");
  });
}

} // namespace

torch::ScalarType scalar_type(ElementType type) {
  switch (type) {
  case ElementType::boolean: return torch::kBool;
  case ElementType::int8: return torch::kInt8;
  case ElementType::uint8: return torch::kUInt8;
  case ElementType::int16: return torch::kInt16;
  case ElementType::uint16: return torch::kUInt16;
  case ElementType::int32: return torch::kInt32;
  case ElementType::uint32: return torch::kUInt32;
  case ElementType::int64: return torch::kInt64;
  case ElementType::uint64: return torch::kUInt64;
  case ElementType::float16: return torch::kFloat16;
  case ElementType::float32: return torch::kFloat32;
  case ElementType::float64: return torch::kFloat64;
  }
  return torch::kFloat32;
}

Result<DataSets> array_data_sets(NamedArrays train, std::optional<NamedArrays> test, const DataOptions& data) {
  ACTORPIPE_TRY(check_split(train));
  if (test) {
    ACTORPIPE_TRY(check_split(*test));
    ACTORPIPE_TRY(check_like(*test, train));
  } else {
    const std::int64_t n = train.inputs.size(0);
    if (n < 2)
      return Error::bad_input(train.inputs_name +
                              ": one sample, too few to keep a tenth for testing (or give a test split)");
    const std::int64_t held = std::max<std::int64_t>(1, n / 10);
    test = NamedArrays{train.inputs.slice(0, n - held), train.labels.slice(0, n - held), train.inputs_name,
                       train.labels_name};
    train.inputs = train.inputs.slice(0, 0, n - held);
    train.labels = train.labels.slice(0, 0, n - held);
  }
  const bool tokens = is_integer(train.inputs);
  auto largest = largest_label({&train, &*test});
  ACTORPIPE_TRY(largest);
  const bool given = data.classes > 0;
  const std::int64_t classes = given ? data.classes : *largest + 1;
  for (const NamedArrays* s : {&train, &*test}) {
    ACTORPIPE_TRY(check_labels_below(*s, classes, given));
    ACTORPIPE_TRY(tokens ? check_ids(*s, data.vocabulary) : check_finite(*s));
  }
  DataSets sets;
  sets.shape.sample = train.inputs.sizes().slice(1).vec();
  sets.shape.classes = classes;
  sets.shape.tokens = tokens;
  sets.shape.source = train.inputs_name;
  sets.train = {std::move(train.inputs), std::move(train.labels)};
  sets.test = {std::move(test->inputs), std::move(test->labels)};
  return sets;
}

} // namespace actorpipe::train
