#include "run/metrics_writer.hpp"
#include "run/run_record.hpp"

#include "base/atomic_file.hpp"
#include "base/input_file.hpp"
#include "tracking/metrics_table.hpp"
#include "tracking/tensorboard_events.hpp"

#include <actorpipe/training.hpp>

#include <chrono>

namespace actorpipe::actors {

Result<MetricsWriter> MetricsWriter::open(const std::string& folder, const std::string& resume_from, std::uint64_t step,
                                          bool tensorboard) {
  MetricsWriter w;
  w.folder_ = folder;
  w.wall_time_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string kept =
      resume_from.empty() ? std::string() : metrics_up_to(resume_from + "/" + std::string(metrics_file), step);
  const std::string path = folder + "/" + std::string(metrics_file);
  ACTORPIPE_TRY(write_file_atomically(path, kept));
  w.metrics_.open(path, std::ios::app);
  if (!w.metrics_) return Error::run_failed(path + ": cannot write");
  if (tensorboard) {
    // One file under a fixed name, its records those of the kept lines: a resumed run
    // replaces it, and TensorBoard never sees a step twice.
    const std::string events = folder + "/" + std::string(tensorboard_events_file);
    ACTORPIPE_TRY(write_file_atomically(events, tracking::tensorboard_events(kept, w.wall_time_)));
    w.events_.open(events, std::ios::app | std::ios::binary);
    if (!w.events_) return Error::run_failed(events + ": cannot write");
  }
  ACTORPIPE_TRY(w.write_table());
  return w;
}

Status MetricsWriter::write(const nlohmann::json& line) {
  const std::string text = line.dump();
  metrics_ << text << "\n" << std::flush;
  if (!metrics_) return Error::run_failed(folder_ + "/" + std::string(metrics_file) + ": cannot write");
  if (events_.is_open()) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    events_ << tracking::tensorboard_record(text, now) << std::flush;
    if (!events_) return Error::run_failed(folder_ + "/" + std::string(tensorboard_events_file) + ": cannot write");
  }
  return Ok{};
}

Status MetricsWriter::write_table() {
  auto lines = read_file(folder_ + "/" + std::string(metrics_file));
  ACTORPIPE_TRY(lines);
  return write_file_atomically(folder_ + "/" + std::string(metrics_table_file), tracking::metrics_csv(*lines));
}

} // namespace actorpipe::actors
