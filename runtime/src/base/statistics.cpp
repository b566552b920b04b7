#include "base/statistics.hpp"

#include <algorithm>
#include <cstddef>

namespace actorpipe {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

} // namespace actorpipe
