#include "base/chrome_trace.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace actorpipe {

ChromeTrace::ChromeTrace() {
  out_.precision(12);
  out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
}

void ChromeTrace::comma() {
  if (!first_) out_ << ",\n";
  first_ = false;
}

void ChromeTrace::process(std::size_t pid, const std::string& name) {
  comma();
  out_ << R"({"name":"process_name","ph":"M","pid":)" << pid << R"(,"args":{"name":)" << nlohmann::json(name).dump()
       << "}}";
}

void ChromeTrace::thread(std::size_t pid, std::size_t tid, const std::string& name) {
  comma();
  out_ << R"({"name":"thread_name","ph":"M","pid":)" << pid << ",\"tid\":" << tid << R"(,"args":{"name":)"
       << nlohmann::json(name).dump() << "}}";
  comma();
  out_ << R"({"name":"thread_sort_index","ph":"M","pid":)" << pid << ",\"tid\":" << tid << R"(,"args":{"sort_index":)"
       << tid << "}}";
}

void ChromeTrace::span(std::size_t pid, std::size_t tid, const std::string& name, const char* category, double start_us,
                       double duration_us, std::optional<std::uint64_t> step, std::optional<double> cpu_us) {
  comma();
  out_ << "{\"name\":" << nlohmann::json(name).dump() << ",\"cat\":\"" << category << "\",\"ph\":\"X\",\"pid\":" << pid
       << ",\"tid\":" << tid << ",\"ts\":" << start_us << ",\"dur\":" << duration_us;
  if (step || cpu_us) {
    out_ << ",\"args\":{";
    if (step) out_ << "\"step\":" << *step << (cpu_us ? "," : "");
    if (cpu_us) out_ << "\"cpu_ms\":" << *cpu_us / 1000.0;
    out_ << "}";
  }
  out_ << "}";
}

void ChromeTrace::counter(std::size_t pid, const std::string& name, double at_us, double value) {
  if (!std::isfinite(value)) return; // JSON has no NaN
  comma();
  const std::string quoted = nlohmann::json(name).dump();
  out_ << "{\"name\":" << quoted << ",\"ph\":\"C\",\"pid\":" << pid << ",\"ts\":" << at_us << ",\"args\":{" << quoted
       << ":" << nlohmann::json(value).dump() << "}}";
}

std::string ChromeTrace::finish() {
  out_ << "\n]}\n";
  return out_.str();
}

} // namespace actorpipe
