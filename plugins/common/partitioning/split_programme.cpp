#include "common/partitioning/split_programme.hpp"

#include <algorithm>
#include <cmath>

namespace actorpipe::partitioning {

CutCandidates CutCandidates::every(std::size_t S, std::size_t N) {
  CutCandidates c{std::vector<std::vector<std::size_t>>(S + 1)};
  c.at[0] = {0};
  for (std::size_t s = 1; s < S; ++s)
    for (std::size_t b = s; b + (S - s) <= N; ++b)
      c.at[s].push_back(b);
  c.at[S] = {N};
  return c;
}

double CutCandidates::pairs() const {
  double pairs = 0;
  for (std::size_t s = 1; s < at.size(); ++s) {
    std::size_t below = 0; // candidates of cut s − 1 before j
    for (const std::size_t j : at[s]) {
      while (below < at[s - 1].size() && at[s - 1][below] < j)
        ++below;
      pairs += static_cast<double>(below);
    }
  }
  return pairs;
}

std::vector<std::size_t> coarse_groups(const UnitCosts& costs, std::size_t S, double budget) {
  const std::size_t N = costs.size();
  const double n = static_cast<double>(N);
  if (static_cast<double>(S) * n * n / 2 <= budget) return {};
  // S · G² / 2 pairs over G groups; at least two groups a stage.
  const auto marks =
      std::max<std::size_t>(S, static_cast<std::size_t>(std::sqrt(2 * budget / static_cast<double>(S)) / 2));
  std::vector<std::size_t> groups{0, N};
  for (std::size_t k = 1; k < marks; ++k)
    groups.push_back(k * N / marks);
  const double total = costs.compute_ms(0, N);
  if (total > 0) {
    std::size_t k = 1;
    for (std::size_t u = 1; u < N && k < marks; ++u)
      if (costs.compute_ms(0, u) >= total * static_cast<double>(k) / static_cast<double>(marks)) {
        groups.push_back(u);
        while (k < marks && costs.compute_ms(0, u) >= total * static_cast<double>(k) / static_cast<double>(marks))
          ++k;
      }
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  return groups;
}

CutCandidates around(const std::vector<std::size_t>& coarse, const std::vector<std::size_t>& groups) {
  const std::size_t S = coarse.size() - 1, N = coarse.back();
  CutCandidates c{std::vector<std::vector<std::size_t>>(S + 1)};
  c.at[0] = {0};
  c.at[S] = {N};
  for (std::size_t s = 1; s < S; ++s) {
    const auto g = static_cast<std::size_t>(std::lower_bound(groups.begin(), groups.end(), coarse[s]) - groups.begin());
    const std::size_t lo = std::max(groups[g == 0 ? 0 : g - 1], s);
    const std::size_t hi = std::min(groups[std::min(g + 1, groups.size() - 1)], N - (S - s));
    for (std::size_t b = lo; b <= hi; ++b)
      c.at[s].push_back(b);
  }
  return c;
}

} // namespace actorpipe::partitioning
