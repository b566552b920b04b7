#pragma once

/// The files of TLS on a run's control plane (the coordinator's gate and every actor
/// message between the processes, through CAF's OpenSSL module): this process's
/// certificate and key, and the authority that signed the others'. Both sides present
/// a certificate that the other's authority must have signed.

#include <actorpipe/error.hpp>
#include <actorpipe/launch.hpp>

namespace actorpipe::launch {

using TlsFiles = actorpipe::TlsFiles;

/// All three files or none; each one a PEM file OpenSSL reads (a certificate that has
/// not expired, an unencrypted key of that certificate, an authority). The error names
/// the flag and the file.
Status check_tls_files(const TlsFiles& files);

} // namespace actorpipe::launch
