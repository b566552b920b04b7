#pragma once

/// The one median every timing here reports: profiles, runs, tuning, benchmarks.

#include <vector>

namespace actorpipe {

/// The middle of `values` (of an even count, the upper of the two middle ones); 0 for
/// none.
double median(std::vector<double> values);

} // namespace actorpipe
