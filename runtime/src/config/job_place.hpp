#pragma once

/// Where in its job file an error is: for code that holds a JobSpec but reads no TOML
/// (the training runtime's data sets and models), without TOML++'s headers.

#include <actorpipe/job.hpp>

#include <string>

namespace actorpipe::config {

/// `error` placed in `job`: one about a key (Error::key, "model.width") gets where the
/// job sets that key in front ("job.toml:4:9: model.width: 30 is not …"); any other
/// gets `fallback_key`'s place.
Error place_in_job(const JobSpec& job, Error error, const std::string& fallback_key);

} // namespace actorpipe::config
