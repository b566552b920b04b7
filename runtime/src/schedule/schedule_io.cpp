/// Schedule files (docs/schedules.md): TOML with one string of actions per stage.

#include <actorpipe/schedule_io.hpp>

#include "schedule/schedule_table.hpp"

#include "base/input_file.hpp"
#include "config/toml_reader.hpp"
#include "base/text.hpp"

#include <charconv>
#include <filesystem>
#include <optional>

namespace actorpipe {

namespace {

using config::error_at;

/// What follows an action's name: nothing (chunk 0) or "@<chunk>"; none if else.
std::optional<std::uint32_t> chunk_after(const char* at, const char* last) {
  if (at == last) return 0;
  std::uint32_t chunk = 0;
  if (*at != '@') return std::nullopt;
  const auto [end, ec] = std::from_chars(at + 1, last, chunk);
  if (ec != std::errc{} || end != last) return std::nullopt;
  return chunk;
}

/// "F12" → forward of micro-batch 12; B, I and W likewise; "sync" and "step", of no
/// micro-batch; "F12@1" and "sync@1" on chunk 1.
Result<Action> parse_action(std::string_view token, const std::vector<std::uint32_t>& sizes) {
  static constexpr std::string_view letters = "FBIW";
  const auto not_an_action = [&] {
    return Error::bad_input("'" + std::string(token) +
                            "' is not an action (F<k>, B<k>, I<k>, W<k>, sync or step, with @<chunk> on a chunk)");
  };
  const char* const last = token.data() + token.size();
  for (const Op op : {Op::sync, Op::step}) {
    const std::string_view word = op == Op::sync ? "sync" : "step";
    if (!token.starts_with(word)) continue;
    const auto chunk = chunk_after(token.data() + word.size(), last);
    if (!chunk) return not_an_action();
    return Action{op, 0, 0, *chunk};
  }
  const auto kind = token.empty() ? std::string_view::npos : letters.find(token[0]);
  if (token.size() < 2 || kind == std::string_view::npos) return not_an_action();
  std::size_t k = 0;
  const auto [end, ec] = std::from_chars(token.data() + 1, last, k);
  if (ec != std::errc{}) return not_an_action();
  const auto chunk = chunk_after(end, last);
  if (!chunk) return not_an_action();
  if (k >= sizes.size())
    return Error::bad_input("'" + std::string(token) + "': micro-batch " + std::to_string(k) +
                            " does not exist (there are " + std::to_string(sizes.size()) + ")");
  return Action{static_cast<Op>(kind), k, sizes[k], *chunk};
}

} // namespace

std::string format_schedule(const Schedule& schedule) {
  std::string out = "name = " + text::toml_quote(schedule.name) + "\nmicro_batch_sizes = [";
  for (std::size_t k = 0; k < schedule.micro_batch_sizes.size(); ++k)
    out += (k ? ", " : "") + std::to_string(schedule.micro_batch_sizes[k]);
  out += "]\n";
  if (schedule.chunks > 1)
    out += "chunks = " + std::to_string(schedule.chunks) + "\nshape = \"" + to_string(schedule.shape) + "\"\n";
  out += "stages = [\n";
  for (const auto& actions : schedule.stages) {
    std::string line;
    for (const Action& a : actions)
      line += (line.empty() ? "" : " ") + to_string(a);
    out += "  \"" + line + "\",\n";
  }
  return out + "]\n";
}

Result<Schedule> parse_schedule(std::string_view text, const std::string& source) {
  auto root = config::parse_toml(text, source);
  ACTORPIPE_TRY(root);
  return read_schedule_table(*root, source);
}

Result<Schedule> read_schedule_table(const toml::table& root, const std::string& source) {
  auto schedule = [&]() -> Result<Schedule> {
    config::TableReader reader(root, "");
    Schedule schedule;
    schedule.name = "custom";
    ACTORPIPE_TRY(reader.string("name", schedule.name));
    ACTORPIPE_TRY(reader.require("micro_batch_sizes"));
    const toml::node* sizes = reader.node("micro_batch_sizes");
    if (!sizes->is_array()) return error_at(*sizes, "micro_batch_sizes", "expected an array of sample counts");
    for (const toml::node& size : *sizes->as_array()) {
      // An integer node only: TOML++ converts a float to an integer without a range check.
      const std::optional<std::int64_t> value =
          size.is_integer() ? std::optional<std::int64_t>(size.as_integer()->get()) : std::nullopt;
      if (!value || *value < 1 || *value > (1 << 24))
        return error_at(size, "micro_batch_sizes", "expected a positive sample count");
      schedule.micro_batch_sizes.push_back(static_cast<std::uint32_t>(*value));
    }
    ACTORPIPE_TRY(reader.integer("chunks", schedule.chunks, 1u, 64u));
    std::string shape = to_string(schedule.shape);
    ACTORPIPE_TRY(reader.string("shape", shape));
    if (const auto named = chunk_shape_named(shape))
      schedule.shape = *named;
    else
      return error_at(*reader.node("shape"), "shape", "expected \"loop\" or \"v\", not '" + shape + "'");
    ACTORPIPE_TRY(reader.require("stages"));
    const toml::node* stages = reader.node("stages");
    if (!stages->is_array()) return error_at(*stages, "stages", "expected an array of strings, one per stage");
    std::size_t index = 0;
    for (const toml::node& line : *stages->as_array()) {
      const std::string key = "stages[" + std::to_string(index++) + "]";
      const auto* actions = line.as_string();
      if (!actions) return error_at(line, key, "expected a string of actions such as \"F0 F1 B0 B1\"");
      auto& out = schedule.stages.emplace_back();
      for (const std::string& token : text::split(actions->get(), ' ')) {
        if (token.empty()) continue;
        auto action = parse_action(token, schedule.micro_batch_sizes);
        if (!action) return error_at(line, key, action.error().message);
        out.push_back(*action);
      }
    }
    ACTORPIPE_TRY(reader.finish());
    return schedule;
  }();
  // A table built rather than parsed (a Lua plugin's) has no places: its source has.
  if (!schedule) return std::move(schedule).error().placed({source});
  if (auto s = validate(*schedule); !s) return std::move(s).error().with_context(source + ": ");
  return schedule;
}

Result<Schedule> load_schedule(const std::string& path) {
  auto text = read_file(path);
  ACTORPIPE_TRY(text);
  return parse_schedule(*text, path);
}

} // namespace actorpipe
