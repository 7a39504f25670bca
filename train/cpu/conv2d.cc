#include "train/cpu/conv2d.h"

#include <algorithm>
#include <cstring>

#include "train/cpu/gemm.h"

namespace tributary::cpu {
namespace {

// Copies or zeroes `len` floats of an im2col row (a few taps' channels: 5 floats for a 5-wide
// kernel over one channel) with fixed-size moves the compiler inlines, not a library call per
// piece: for narrow layers the calls cost more than the copying. Longer pieces go to the library.
inline void CopyFew(float* dst, const float* src, int64_t len) {
  if (len > 32) {  // a wide layer's row: the library's copy is as fast as any
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(len));
    return;
  }
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) std::memcpy(dst + i, src + i, 8 * sizeof(float));
  if (len - i >= 4) {
    std::memcpy(dst + i, src + i, 4 * sizeof(float));
    i += 4;
  }
  if (len - i >= 2) {
    std::memcpy(dst + i, src + i, 2 * sizeof(float));
    i += 2;
  }
  if (len - i >= 1) dst[i] = src[i];
}

inline void ZeroFew(float* dst, int64_t len) {
  if (len > 32) {
    std::memset(dst, 0, sizeof(float) * static_cast<size_t>(len));
    return;
  }
  static constexpr float kZeros[8] = {};
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) std::memcpy(dst + i, kZeros, 8 * sizeof(float));
  if (len - i >= 4) {
    std::memcpy(dst + i, kZeros, 4 * sizeof(float));
    i += 4;
  }
  if (len - i >= 2) {
    std::memcpy(dst + i, kZeros, 2 * sizeof(float));
    i += 2;
  }
  if (len - i >= 1) dst[i] = 0.0f;
}

}  // namespace

Conv2D::Conv2D(const ConvTaps& g, int64_t out_c, int64_t max_batch)
    : h_(g.h),
      w_(g.w),
      c_(g.c),
      oc_(out_c),
      kh_(g.kh),
      kw_(g.kw),
      ph_(g.ph),
      pw_(g.pw),
      oh_(g.oh()),
      ow_(g.ow()),
      taps_(g.taps()),
      out_c_(out_c) {
  if (UsesWinograd(g)) {
    wino_ = &WinogradFor(kh_);
    tiles_ = WinogradTiles(*wino_, oh_);
    // A chunk's transformed tensors (input, products, output gradient) in about 768 KiB; the
    // transformed input is kept for the whole batch (a chunk's block after another), for the
    // filter gradient.
    const int64_t a = wino_->a, wide = std::max(c_, oc_);
    const int64_t per_sample = tiles_ * a * (c_ + oc_ + wide) * static_cast<int64_t>(sizeof(float));
    chunk_ = std::clamp<int64_t>((int64_t{3} << 18) / per_sample, 1, max_batch);
    wu_.resize(static_cast<size_t>(a * c_ * oc_));
    wd_.resize(wu_.size());
    ReserveWinogradBlocks(max_batch);
    wm_.resize(static_cast<size_t>(a * chunk_ * tiles_ * wide));
    wz_.resize(static_cast<size_t>(a * chunk_ * tiles_ * oc_));
    return;
  }
  const int64_t per_sample = oh_ * ow_ * taps_ * static_cast<int64_t>(sizeof(float));
  chunk_ = std::clamp<int64_t>((int64_t{3} << 19) / per_sample, 1, max_batch);
  direct_ = UsesDirectKernels(g, out_c);
  if (!direct_) {
    cols_.resize(static_cast<size_t>(chunk_ * oh_ * ow_ * taps_));
    return;
  }
  shape_ = DirectConvShape{h_, w_, c_, kh_, kw_, ph_, pw_, oc_};
  if (DirectConvCopiesInput(shape_))
    padded_.resize(static_cast<size_t>(DirectConvPaddedFloats(shape_, max_batch)));
  packed_.resize(static_cast<size_t>(taps_ * DirectConvPaddedChannels(oc_)));
  packed_grad_.resize(packed_.size());
  dy_scratch_.resize(static_cast<size_t>(DirectConvScratchFloats(shape_)));
}

bool Conv2D::UsesDirectKernels(const ConvTaps& g, int64_t out_c) {
  // Rows of at least 4 output pixels: the kernels block pixels along a row (a Conv1D's rows hold
  // one pixel each, and its wide layers run well as GEMMs).
  return out_c <= kDirectMaxChannels && g.ow() >= 4;
}

bool Conv2D::UsesWinograd(const ConvTaps& g) {
  return g.w == 1 && g.kw == 1 && g.pw == 0 && WinogradSupports(g.kh) && 2 * g.ph == g.kh - 1;
}

void Conv2D::Bind(float* params, float* grads) {
  wt_ = params;
  b_ = params + oc_ * taps_;
  dwt_ = grads;
  db_ = grads + oc_ * taps_;
}

void Conv2D::Im2Col(const float* in, int64_t n) {
  float* row = cols_.data();
  const int64_t kc = kw_ * c_;
  for (int64_t s = 0; s < n; ++s) {
    const float* img = in + s * h_ * w_ * c_;
    for (int64_t oy = 0; oy < oh_; ++oy) {
      for (int64_t ox = 0; ox < ow_; ++ox, row += taps_) {
        // Valid kernel columns: ix = ox + kx - pw in [0, w).
        const int64_t kx0 = std::max<int64_t>(0, pw_ - ox);
        const int64_t kx1 = std::min<int64_t>(kw_, w_ + pw_ - ox);
        for (int64_t ky = 0; ky < kh_; ++ky) {
          float* dst = row + ky * kc;
          const int64_t iy = oy + ky - ph_;
          if (iy < 0 || iy >= h_ || kx0 >= kx1) {
            ZeroFew(dst, kc);
            continue;
          }
          if (kx0 > 0) ZeroFew(dst, kx0 * c_);
          CopyFew(dst + kx0 * c_, img + (iy * w_ + ox + kx0 - pw_) * c_, (kx1 - kx0) * c_);
          if (kx1 < kw_) ZeroFew(dst + kx1 * c_, (kw_ - kx1) * c_);
        }
      }
    }
  }
}

void Conv2D::Col2Im(const float* cols, float* grad_in, int64_t n) const {
  std::memset(grad_in, 0, sizeof(float) * n * h_ * w_ * c_);
  const float* row = cols;
  const int64_t kc = kw_ * c_;
  for (int64_t s = 0; s < n; ++s) {
    float* img = grad_in + s * h_ * w_ * c_;
    for (int64_t oy = 0; oy < oh_; ++oy) {
      for (int64_t ox = 0; ox < ow_; ++ox, row += taps_) {
        const int64_t kx0 = std::max<int64_t>(0, pw_ - ox);
        const int64_t kx1 = std::min<int64_t>(kw_, w_ + pw_ - ox);
        for (int64_t ky = 0; ky < kh_; ++ky) {
          const int64_t iy = oy + ky - ph_;
          if (iy < 0 || iy >= h_ || kx0 >= kx1) continue;
          const float* src = row + ky * kc + kx0 * c_;
          float* dst = img + (iy * w_ + ox + kx0 - pw_) * c_;
          const int64_t len = (kx1 - kx0) * c_;
          for (int64_t i = 0; i < len; ++i) dst[i] += src[i];
        }
      }
    }
  }
}

void Conv2D::DirectForward(const float* in, float* out, int64_t n) {
  if (!padded_.empty()) PadDirectConvInput(shape_, in, n, padded_.data());
  PackDirectConvWeights(shape_, wt_, packed_.data());
  DirectConvForward(shape_, PaddedInput(in), n, packed_.data(), b_, out);
}

void Conv2D::DirectFilterGrad(const float* in, const float* grad_out, int64_t n) {
  std::fill(packed_grad_.begin(), packed_grad_.end(), 0.0f);
  DirectConvFilterGrad(shape_, PaddedInput(in), n, grad_out, packed_grad_.data(),
                       dy_scratch_.data());
  UnpackDirectConvWeights(shape_, packed_grad_.data(), dwt_);
}

void Conv2D::ReserveWinogradBlocks(int64_t n) {
  // Sized for the constructor's max_batch; a larger batch grows them.
  const size_t need =
      static_cast<size_t>((n + chunk_ - 1) / chunk_ * wino_->a * chunk_ * tiles_ * c_);
  if (wv_.size() < need) wv_.resize(need);
}

void Conv2D::WinogradForward(const float* in, float* out, int64_t n) {
  const WinogradMatrices& w = *wino_;
  WinogradWeights(w, wt_, oc_, c_, false, wu_.data());
  const int64_t in_size = h_ * c_, out_size = oh_ * oc_;
  ReserveWinogradBlocks(n);
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s), rows = m * tiles_;
    float* v = WinogradBlock(s);
    WinogradInput(w, in + s * in_size, m, h_, c_, ph_, tiles_, v);
    for (int64_t xi = 0; xi < w.a; ++xi)  // M_xi = V_xi U_xi (U_xi held as [oc][c])
      Gemm(false, true, rows, oc_, c_, v + xi * rows * c_, wu_.data() + xi * oc_ * c_,
           wm_.data() + xi * rows * oc_, false);
    WinogradOutput(w, wm_.data(), m, oh_, oc_, tiles_, b_, out + s * out_size);
  }
  transformed_batch_ = n;
}

void Conv2D::WinogradBackward(const float* in, const float* grad_out, float* grad_in, int64_t n) {
  const WinogradMatrices& w = *wino_;
  const int64_t in_size = h_ * c_, out_size = oh_ * oc_;
  ReserveWinogradBlocks(n);
  // The filter gradient: D_xi = sum over tiles of Z_xi^T V_xi, then dw_j = sum_xi G[xi][j] D_xi.
  std::fill(wd_.begin(), wd_.end(), 0.0f);
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s), rows = m * tiles_;
    float* v = WinogradBlock(s);
    // Forward() kept this batch's transformed input (cpu_layer.h: Backward follows Forward of the
    // same batch); recomputed only if the batch's size says otherwise.
    if (transformed_batch_ != n) WinogradInput(w, in + s * in_size, m, h_, c_, ph_, tiles_, v);
    WinogradGradOutput(w, grad_out + s * out_size, m, oh_, oc_, tiles_, wz_.data());
    for (int64_t xi = 0; xi < w.a; ++xi)
      Gemm(true, false, oc_, c_, rows, wz_.data() + xi * rows * oc_, v + xi * rows * c_,
           wd_.data() + xi * oc_ * c_, true);
  }
  WinogradFilterGrad(w, wd_.data(), oc_, c_, dwt_);
  if (!grad_in) return;
  // The input gradient: the same convolution of the output gradient with the taps reversed (and
  // the channels' roles swapped); "same" padding is its own transpose's.
  WinogradWeights(w, wt_, oc_, c_, true, wu_.data());
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s), rows = m * tiles_;
    WinogradInput(w, grad_out + s * out_size, m, oh_, oc_, kh_ - 1 - ph_, tiles_, wz_.data());
    for (int64_t xi = 0; xi < w.a; ++xi)
      Gemm(false, false, rows, c_, oc_, wz_.data() + xi * rows * oc_, wu_.data() + xi * oc_ * c_,
           wm_.data() + xi * rows * c_, false);
    WinogradOutput(w, wm_.data(), m, h_, c_, tiles_, nullptr, grad_in + s * in_size);
  }
}

void Conv2D::Forward(const float* in, float* out, int64_t n) {
  if (wino_) return WinogradForward(in, out, n);
  if (direct_) return DirectForward(in, out, n);
  const int64_t in_size = h_ * w_ * c_, pix = oh_ * ow_;
  const auto bias = Eigen::Map<const Eigen::RowVectorXf>(b_, oc_);
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s);
    Im2Col(in + s * in_size, m);
    float* y_data = out + s * pix * oc_;
    Gemm(false, true, m * pix, oc_, taps_, cols_.data(), wt_, y_data, false);  // y = cols * wt^T
    MatrixMap y(y_data, m * pix, oc_);
    y.rowwise() += bias;
  }
}

void Conv2D::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                      int64_t n) {
  const int64_t in_size = h_ * w_ * c_, pix = oh_ * ow_;
  MatrixMap dwt(dwt_, oc_, taps_);
  auto db = Eigen::Map<Eigen::RowVectorXf>(db_, oc_);
  if (wino_) {
    db = ConstMatrixMap(grad_out, n * pix, oc_).colwise().sum();
    return WinogradBackward(in, grad_out, grad_in, n);
  }
  if (direct_)
    DirectFilterGrad(in, grad_out, n);
  else
    dwt.setZero();
  db.setZero();
  const size_t dcols_size = static_cast<size_t>(chunk_ * pix * taps_);
  if (grad_in && dcols_.size() < dcols_size) dcols_.resize(dcols_size);
  for (int64_t s = 0; s < n; s += chunk_) {
    const int64_t m = std::min(chunk_, n - s);
    const float* dy_data = grad_out + s * pix * oc_;
    ConstMatrixMap dy(dy_data, m * pix, oc_);
    if (!direct_) {  // dwt += dy^T cols
      Im2Col(in + s * in_size, m);
      Gemm(true, false, oc_, taps_, m * pix, dy_data, cols_.data(), dwt_, true);
    }
    db += dy.colwise().sum();
    if (grad_in) {
      Gemm(false, false, m * pix, taps_, oc_, dy_data, wt_, dcols_.data(), false);  // dcols = dy wt
      Col2Im(dcols_.data(), grad_in + s * in_size, m);
    }
  }
}

}  // namespace tributary::cpu
