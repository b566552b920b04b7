/// parse_injected_failure(): the text form of an injected failure.

#include "injected_failure.hpp"

#include <actorpipe/job.hpp>

#include <charconv>
#include <limits>
#include <string_view>
#include <tuple>

namespace actorpipe::actors {

Result<InjectedFailure> parse_injected_failure(const std::string& text, std::size_t stages, bool processes) {
  using Effect = InjectedFailure::Effect;
  InjectedFailure f;
  std::uint64_t stage = 0, step = 0;
  std::string form = text;
  // Ending or stopping a process is for workers only.
  for (const auto& [suffix, effect, anywhere] :
       {std::tuple<std::string, Effect, bool>{":exit", Effect::exit_process, false},
        {":hang", Effect::hang_process, false},
        {":stall", Effect::stall_thread, true},
        {":stall-sync", Effect::stall_sync, true}})
    if ((processes || anywhere) && form.size() > suffix.size() && form.ends_with(suffix)) {
      f.effect = effect;
      form.resize(form.size() - suffix.size());
    }
  // Digits only, each within its bound: sscanf's %lu took "-1" as 2^64 − 1 and let
  // 20 digits overflow.
  const auto whole = [](std::string_view digits, std::uint64_t most, std::uint64_t& out) {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return error == std::errc() && end == digits.data() + digits.size() && out <= most;
  };
  const auto colon = form.find(':');
  const bool parsed =
      colon != std::string::npos &&
      whole(std::string_view(form).substr(0, colon), std::numeric_limits<std::uint32_t>::max(), stage) &&
      whole(std::string_view(form).substr(colon + 1), max_steps, step);
  if (!parsed || step == 0)
    return Error::bad_input("--inject-failure: expected STAGE:STEP (step from 1 to 2^40), " +
                            std::string(processes ? "STAGE:STEP:exit, STAGE:STEP:hang or " : "") +
                            "STAGE:STEP:stall or STAGE:STEP:stall-sync, found '" + text + "'");
  if (stage >= stages)
    return Error::bad_input("--inject-failure: the plan has no stage " + std::to_string(stage) + " (stages 0.." +
                            std::to_string(stages - 1) + ")");
  f.stage = stage;
  f.step = step;
  return f;
}

} // namespace actorpipe::actors
