/// Partitioner `parameters`: contiguous stages whose parameter bytes are balanced.
///
/// Exact, in two dynamic programmes over blocks: the first (min_max_split) finds the smallest possible
/// largest stage; the second, among partitions within that bound, the one with the
/// least sum of squared stage sizes, so that stages off the critical one are even too.
/// O(stages · blocks²).

#include "common/partitioning/split_programme.hpp"

#include <limits>

namespace {

using namespace actorpipe;

class ParametersPartitioner : public Partitioner {
public:
  Result<Partition> partition(const PlanContext& context) override {
    ACTORPIPE_TRY(check_options(context.options, {}));
    const auto& blocks = context.profile.blocks;
    const std::size_t n = blocks.size();
    const std::size_t stages = context.stages;
    if (stages == 0 || stages > n)
      return Error::bad_input("cannot put " + std::to_string(n) + " blocks in " + std::to_string(stages) + " stages");

    std::vector<double> prefix(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + static_cast<double>(blocks[i].parameter_bytes);
    auto size = [&](std::size_t from, std::size_t to) { return prefix[to] - prefix[from]; };
    constexpr double none = std::numeric_limits<double>::infinity();

    const std::vector<std::size_t> first = partitioning::min_max_split(
        stages, n, [&](std::size_t, std::size_t i, std::size_t j) { return size(i, j); }, context.progress);
    double bound = 0;
    for (std::size_t s = 0; s < stages; ++s)
      bound = std::max(bound, size(first[s], first[s + 1]));

    // squares[s][i]: the least sum of squared stage sizes with every stage within bound.
    std::vector<std::vector<double>> squares(stages + 1, std::vector<double>(n + 1, none));
    std::vector<std::vector<std::size_t>> from(stages + 1, std::vector<std::size_t>(n + 1, 0));
    squares[0][0] = 0;
    for (std::size_t s = 1; s <= stages; ++s)
      for (std::size_t i = s; i <= n - (stages - s); ++i)
        for (std::size_t j = s - 1; j < i; ++j) {
          const double stage = size(j, i);
          if (squares[s - 1][j] == none || stage > bound) continue;
          const double total = squares[s - 1][j] + stage * stage;
          if (total < squares[s][i]) {
            squares[s][i] = total;
            from[s][i] = j;
          }
        }

    Partition partition;
    partition.cuts.assign(stages + 1, Cut{});
    std::size_t end = n;
    for (std::size_t s = stages; s > 0; --s) {
      partition.cuts[s] = {end, 0};
      end = from[s][end];
    }
    return partition;
  }
};

} // namespace

ACTORPIPE_PLUGIN(ParametersPartitioner, "parameters", "1.0.0", "contiguous stages with balanced parameter bytes")
