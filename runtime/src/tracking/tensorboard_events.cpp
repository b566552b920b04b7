#include "tracking/tensorboard_events.hpp"

#include "tracking/tensorboard_event.pb.h"

#include <boost/crc.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace actorpipe::tracking {

namespace {

void append_little_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

/// One TFRecord: the length, its masked CRC, the record, the record's masked CRC.
void append_record(std::string& out, const tensorboard::Event& event) {
  const std::string record = event.SerializeAsString();
  std::string length;
  append_little_endian(length, record.size(), 8);
  out += length;
  append_little_endian(out, masked_crc32c(length), 4);
  out += record;
  append_little_endian(out, masked_crc32c(record), 4);
}

/// Which metrics of a line become which scalars, by the line's kind.
struct Scalar {
  const char* key;
  const char* tag;
};
constexpr Scalar step_scalars[] = {{"loss", "train/loss"},
                                   {"samples_per_s", "train/samples_per_s"},
                                   {"step_ms", "train/step_ms"},
                                   {"skipped_steps", "train/skipped_steps"},
                                   {"rss_bytes", "memory/rss_bytes"},
                                   {"gpu_peak_bytes", "memory/gpu_peak_bytes"}};
constexpr Scalar evaluation_scalars[] = {{"test_loss", "test/loss"}, {"test_accuracy", "test/accuracy"}};

} // namespace

std::uint32_t masked_crc32c(std::string_view bytes) {
  // CRC-32C (Castagnoli), reflected, as TFRecord frames its records.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tensorboard_record(std::string_view line, double wall_time) {
  const auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!row.is_object() || !row.contains("step") || !row["step"].is_number_integer()) return {};
  const std::string kind = row.value("kind", "");
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(row["step"].get<std::int64_t>());
  tensorboard::Summary* summary = event.mutable_summary();
  const auto add = [&](const auto& scalars) {
    for (const Scalar& s : scalars)
      if (const auto it = row.find(s.key); it != row.end() && it->is_number()) {
        tensorboard::Summary::Value* value = summary->add_value();
        value->set_tag(s.tag);
        value->set_simple_value(it->get<float>());
      }
  };
  if (kind == "step") add(step_scalars);
  if (kind == "evaluation") add(evaluation_scalars);
  std::string out;
  if (summary->value_size() > 0) append_record(out, event);
  return out;
}

std::string tensorboard_events(std::string_view metrics_jsonl, double wall_time) {
  std::string out;
  tensorboard::Event version;
  version.set_wall_time(wall_time);
  version.set_file_version("brain.Event:2");
  append_record(out, version);
  std::istringstream lines{std::string(metrics_jsonl)};
  for (std::string line; std::getline(lines, line);)
    out += tensorboard_record(line, wall_time);
  return out;
}

} // namespace actorpipe::tracking
