#include "train/cpu/dense.h"

#include "train/cpu/gemm.h"

namespace tributary::cpu {

void Dense::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + out_ * in_;
  dw_ = grads;
  db_ = grads + out_ * in_;
}

void Dense::Forward(const float* in, float* out, int64_t n) {
  Gemm(false, true, n, out_, in_, in, w_, out, false);  // y = x * w^T
  MatrixMap y(out, n, out_);
  y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b_, out_);
}

void Dense::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                     int64_t n) {
  ConstMatrixMap dy(grad_out, n, out_);
  Gemm(true, false, out_, in_, n, grad_out, in, dw_, false);  // dw = dy^T * x
  Eigen::Map<Eigen::RowVectorXf>(db_, out_) = dy.colwise().sum();
  if (grad_in) Gemm(false, false, n, in_, out_, grad_out, w_, grad_in, false);  // dx = dy * w
}

}  // namespace tributary::cpu
