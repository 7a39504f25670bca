// PEM-encoded certificate and private key, as produced by cert_authority.h and written by
// tributary-certs.
#pragma once

#include <string>

#include "tributary/result.h"

namespace tributary {

// A certificate and its private key, both PEM text. The key is unencrypted PKCS#8: whoever holds
// a PemPair holds the secret, so write key_pem only with WritePemPair (mode 0600).
struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

// Loads a certificate and its key from PEM files and checks that they belong together. Errors
// name the file: missing or unreadable (NotFound/IoError), not PEM (InvalidArgument), or
// "private key <key_path> does not match certificate <cert_path>" (InvalidArgument).
Result<PemPair> LoadPemPair(const std::string& cert_path, const std::string& key_path);

// Writes cert_pem to cert_path (mode 0644) and key_pem to key_path (mode 0600). Each file is
// created under a temporary name with its final mode (open(..., mode), never chmod afterwards),
// fsynced, then moved into place. Unless `overwrite`, fails with FailedPrecondition (naming the
// file) when either path already exists, and leaves both untouched. The parent directory must
// exist.
Status WritePemPair(const PemPair& pair, const std::string& cert_path, const std::string& key_path,
                    bool overwrite);

}  // namespace tributary
