#include "protocol/tls_bio.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace tributary {
namespace {

TlsBioState* StateOf(BIO* bio) { return static_cast<TlsBioState*>(BIO_get_data(bio)); }

int BioRead(BIO* bio, char* data, int len) {
  BIO_clear_retry_flags(bio);
  TlsBioState* s = StateOf(bio);
  if (len <= 0) return 0;
  if (s->in_left == 0) {
    BIO_set_retry_read(bio);
    return -1;
  }
  const size_t n = std::min(s->in_left, static_cast<size_t>(len));
  std::memcpy(data, s->in, n);
  s->in += n;
  s->in_left -= n;
  return static_cast<int>(n);
}

int BioWrite(BIO* bio, const char* data, int len) {
  BIO_clear_retry_flags(bio);
  if (len <= 0) return 0;
  std::vector<uint8_t>* out = StateOf(bio)->out;
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + len);
  return len;
}

long BioCtrl(BIO* bio, int cmd, long /*num*/, void* /*ptr*/) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // written data is already "out"
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(std::min<size_t>(StateOf(bio)->in_left, LONG_MAX));
    case BIO_CTRL_WPENDING:
      return 0;
    default:
      return 0;
  }
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* Method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tributary tls");
    if (m == nullptr) return m;
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

}  // namespace

BIO* NewTlsBio(TlsBioState* state) {
  const BIO_METHOD* method = Method();
  if (method == nullptr) return nullptr;
  BIO* bio = BIO_new(method);
  if (bio != nullptr) BIO_set_data(bio, state);
  return bio;
}

}  // namespace tributary
