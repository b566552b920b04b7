#include "profile/measurement_text.hpp"

#include "base/text.hpp"

namespace actorpipe {

std::string describe_measurement(const ModelProfile& profile, std::uint32_t repeats, const std::string& more_repeats) {
  std::string out = "measured after " + std::to_string(profile.warmup_passes) + " warm-up pass" +
                    (profile.warmup_passes == 1 ? "" : "es") +
                    " (until the last 3 at each batch size agreed within 5%); " + std::to_string(repeats) +
                    " timed at the batch and at an eighth of it, the batch's whole-model times within " +
                    text::format_fixed(100.0 * profile.spread, 1) + "% of each other";
  if (profile.spread > ModelProfile::wide_spread)
    out += "\nactorpipe: warning: the timed passes differ by more than " +
           text::format_fixed(100.0 * ModelProfile::wide_spread, 0) +
           "%: this machine's speed moved while measuring (other work, a changing clock), and plans made from this "
           "profile may mislead; measure again on a quiet machine, or with more " +
           more_repeats;
  return out;
}

} // namespace actorpipe
