#include "train/cpu/dense.h"

namespace tributary::cpu {

void Dense::Bind(float* params, float* grads) {
  w_ = params;
  b_ = params + out_ * in_;
  dw_ = grads;
  db_ = grads + out_ * in_;
}

void Dense::Forward(const float* in, float* out, int64_t n) {
  ConstMatrixMap x(in, n, in_);
  ConstMatrixMap w(w_, out_, in_);
  MatrixMap y(out, n, out_);
  y.noalias() = x * w.transpose();
  y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b_, out_);
}

void Dense::Backward(const float* in, const float*, const float* grad_out, float* grad_in,
                     int64_t n) {
  ConstMatrixMap x(in, n, in_);
  ConstMatrixMap dy(grad_out, n, out_);
  MatrixMap dw(dw_, out_, in_);
  dw.noalias() = dy.transpose() * x;
  Eigen::Map<Eigen::RowVectorXf>(db_, out_) = dy.colwise().sum();
  if (grad_in) {
    ConstMatrixMap w(w_, out_, in_);
    MatrixMap dx(grad_in, n, in_);
    dx.noalias() = dy * w;
  }
}

}  // namespace tributary::cpu
