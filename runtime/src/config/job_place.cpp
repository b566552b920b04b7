/// Errors placed in their job file.

#include "config/job_place.hpp"

namespace actorpipe::config {

Error place_in_job(const JobSpec& job, Error error, const std::string& fallback_key) {
  if (error.place) return error;
  if (error.key.empty()) {
    error.key = fallback_key;
    error.message = fallback_key + ": " + error.message;
  }
  return std::move(error).placed(job.place_of(error.key));
}

} // namespace actorpipe::config
