#include "launch/tls_files.hpp"

#include "base/input_file.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <utility>

namespace actorpipe::launch {

namespace {

template <class T, void (*Free)(T*)> struct Freer {
  void operator()(T* p) const { Free(p); }
};
using Bio = std::unique_ptr<BIO, Freer<BIO, BIO_free_all>>;
using Certificate = std::unique_ptr<X509, Freer<X509, X509_free>>;
using Key = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;

/// OpenSSL's reason for the last failure, its queue left empty for the next call.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return reason ? reason : "no PEM block";
}

/// A passphrase prompt would wait on the terminal of a process nobody watches: an
/// encrypted key is refused instead.
int no_passphrase(char*, int, int, void*) { return -1; }

Error bad(const char* flag, const std::string& path, const std::string& what) {
  return Error::bad_input(std::string(flag) + " " + path + ": " + what);
}

Result<Certificate> read_certificate(const char* flag, const std::string& path) {
  Bio file(BIO_new_file(path.c_str(), "r"));
  if (!file) return bad(flag, path, "cannot be read: " + openssl_reason());
  Certificate certificate(PEM_read_bio_X509(file.get(), nullptr, no_passphrase, nullptr));
  if (!certificate) return bad(flag, path, "is not a PEM certificate (" + openssl_reason() + ")");
  if (X509_cmp_current_time(X509_get0_notAfter(certificate.get())) < 0)
    return bad(flag, path, "the certificate has expired");
  return certificate;
}

} // namespace

Status check_tls_files(const TlsFiles& files) {
  if (!files.enabled()) return Ok{};
  for (const auto& [flag, path] : {std::pair{"--tls-certificate", &files.certificate},
                                   std::pair{"--tls-key", &files.key}, std::pair{"--tls-ca", &files.authority}}) {
    if (path->empty())
      return Error::bad_input(std::string(flag) +
                              ": missing; TLS needs --tls-certificate, --tls-key and --tls-ca together");
    if (auto readable = check_input_file(*path); !readable)
      return std::move(readable).error().with_context(std::string(flag) + ": ");
  }
  // Read here as CAF's OpenSSL module will: a file it cannot load would end the
  // process from inside the module, leaving the workers it started behind.
  auto certificate = read_certificate("--tls-certificate", files.certificate);
  ACTORPIPE_TRY(certificate);
  ACTORPIPE_TRY(read_certificate("--tls-ca", files.authority));
  Bio key_file(BIO_new_file(files.key.c_str(), "r"));
  Key key(key_file ? PEM_read_bio_PrivateKey(key_file.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!key)
    return bad("--tls-key", files.key,
               "is not a PEM private key, or is encrypted (" + openssl_reason() + "); give an unencrypted one");
  if (X509_check_private_key(certificate->get(), key.get()) != 1) {
    ERR_clear_error();
    return bad("--tls-key", files.key, "is not the key of --tls-certificate " + files.certificate);
  }
  return Ok{};
}

} // namespace actorpipe::launch
