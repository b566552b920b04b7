#pragma once

/// A run's metrics as a TensorBoard event file: TFRecord framing (length, masked
/// CRC-32C of the length, the record, masked CRC-32C of the record) around Event
/// messages serialised by protobuf, one scalar summary per metric and step.

#include <cstdint>
#include <string>
#include <string_view>

namespace actorpipe::tracking {

/// The record of one metrics.jsonl line: for a step line `train/loss`,
/// `train/samples_per_s`, `train/step_ms`, `memory/rss_bytes` (and
/// `train/skipped_steps` under fp16, `memory/gpu_peak_bytes` on GPUs), for an
/// evaluation `test/loss` and `test/accuracy`, at the line's step; `wall_time` is when
/// it was written (TensorBoard orders by step). Empty for a line that is not a JSON
/// object with a step.
std::string tensorboard_record(std::string_view line, double wall_time);

/// A whole event file of a run's metrics.jsonl text: the version record TensorBoard
/// expects first, then each line's record.
std::string tensorboard_events(std::string_view metrics_jsonl, double wall_time);

/// The masked CRC-32C TFRecord framing uses, of `bytes`.
std::uint32_t masked_crc32c(std::string_view bytes);

} // namespace actorpipe::tracking
