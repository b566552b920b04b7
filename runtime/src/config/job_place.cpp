/// Errors placed in their job file.

#include "config/job_place.hpp"

namespace actorpipe::config {

Error place_in_job(const JobSpec& job, Error error, const std::string& fallback_key) {
  error.message = job.where(error.key.empty() ? fallback_key : error.key) + error.message;
  error.key.clear();
  return error;
}

} // namespace actorpipe::config
