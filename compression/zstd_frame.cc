#include "compression/zstd_frame.h"

#include <zstd.h>

#include <memory>
#include <string>

namespace tributary {
namespace {

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

Result<std::vector<uint8_t>> ZstdCompress(std::span<const uint8_t> in, int level) {
  std::unique_ptr<ZSTD_CCtx, CCtxFree> ctx(ZSTD_createCCtx());
  if (!ctx) return Status::ResourceExhausted("zstd: cannot create a compression context");
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, 1);
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress2(ctx.get(), out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

Result<std::vector<uint8_t>> ZstdDecompress(std::span<const uint8_t> frame, size_t max_bytes) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR)
    return Status::Corruption("zstd: not a zstd frame (or a truncated frame header)");
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN)
    return Status::Corruption("zstd: the frame does not declare its content size");
  if (declared > max_bytes)
    return Status::Corruption("zstd: the frame declares " + std::to_string(declared) +
                              " bytes, more than the cap of " + std::to_string(max_bytes) +
                              " for this model (a decompression bomb?)");
  const size_t frame_bytes = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_bytes))
    return Status::Corruption(std::string("zstd: truncated or malformed frame: ") +
                              ZSTD_getErrorName(frame_bytes));
  if (frame_bytes != frame.size())
    return Status::Corruption("zstd: " + std::to_string(frame.size() - frame_bytes) +
                              " trailing bytes after the frame");
  std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  if (!ctx) return Status::ResourceExhausted("zstd: cannot create a decompression context");
  // Decoding straight into a buffer of the declared size needs no window buffer; the window limit
  // only guards a future streaming path.
  ZSTD_DCtx_setParameter(ctx.get(), ZSTD_d_windowLogMax, 27);
  std::vector<uint8_t> out(static_cast<size_t>(declared));
  const size_t n =
      ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n))
    return Status::Corruption(std::string("zstd: decompression failed: ") + ZSTD_getErrorName(n));
  if (n != out.size())
    return Status::Corruption("zstd: the frame decompressed to " + std::to_string(n) +
                              " bytes but declared " + std::to_string(declared));
  return out;
}

}  // namespace tributary
