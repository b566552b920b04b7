/// Sync policy `ad-psgd` (AD-PSGD, as a baseline): every pipeline steps on its own
/// gradient, then averages its parameters with one peer drawn at random each round;
/// with an odd count one pipeline sits the round out. The draw depends on the round and
/// the option `seed` (default 1) alone, so every stage pairs the same pipelines and a
/// run repeats.

#include <actorpipe/plugin.hpp>

#include <algorithm>
#include <random>

namespace {

using namespace actorpipe;

class AdPsgdPolicy : public SyncPolicy {
public:
  Result<SyncRound> round(const SyncRequest& request) override {
    ACTORPIPE_TRY(check_options(request.options, {"seed"}));
    auto seed = number_option(request.options, "seed", 1, 0, 1e15);
    ACTORPIPE_TRY(seed);
    std::vector<std::size_t> order = all_pipelines(request.pipelines);
    std::mt19937_64 random(static_cast<std::uint64_t>(*seed) * 0x9e3779b97f4a7c15ULL + request.round);
    std::shuffle(order.begin(), order.end(), random);
    SyncRound round;
    round.kind = SyncRound::Kind::average_parameters;
    for (std::size_t i = 0; i + 1 < order.size(); i += 2)
      round.groups.push_back({order[i], order[i + 1]});
    return round;
  }
};

} // namespace

ACTORPIPE_PLUGIN(AdPsgdPolicy, "ad-psgd", "1.0.0", "parameters averaged with one random peer each round (AD-PSGD)")
