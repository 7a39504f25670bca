// TlsFailureStatus: a failed TLS read, write or handshake as a Status whose code says whether
// waiting can heal it, so a client knows when to stop redialling (client/client_runtime.h).
//
//   PermissionDenied    the peer sent an alert refusing this side's certificate: unknown_ca (the
//                       peer does not trust the CA that issued it), bad_certificate,
//                       unsupported_certificate, certificate_revoked, certificate_expired,
//                       certificate_unknown, access_denied or certificate_required
//   FailedPrecondition  no TLS version both sides accept (a protocol_version alert from the peer,
//                       or none of this side's versions enabled)
//   Unavailable         everything else: a reset, a refused or dropped TCP connection, a TLS
//                       record that does not decrypt, a peer that vanished mid-handshake
//
// The message is "<what>: <OpenSSL's reason>", followed for a refusal by what it means, e.g.
// "read from 127.0.0.1:7070: tlsv1 alert unknown ca (the peer does not trust the
// CA that issued this side's certificate)". Note that in TLS 1.3 a client learns that the server
// refused its certificate only from the first read after the handshake, as such an alert.
// Thread-safe (pure).
#pragma once

#include <boost/system/error_code.hpp>
#include <string_view>

#include "tributary/status.h"

namespace tributary {

Status TlsFailureStatus(const boost::system::error_code& ec, std::string_view what);

}  // namespace tributary
