#include "train/cuda/cuda_layer.h"

#include "train/cuda/conv2d.h"
#include "train/cuda/dense.h"
#include "train/cuda/depthwise_conv2d.h"
#include "train/cuda/embedding.h"
#include "train/cuda/gru.h"
#include "train/cuda/lstm.h"
#include "train/cuda/norm.h"
#include "train/cuda/pointwise.h"

namespace tributary::cuda {

Result<std::unique_ptr<CudaLayer>> MakeCudaLayer(const LayerSpec& spec, const Shape3& in,
                                                 int64_t max_batch, const CudaContext& ctx) {
  switch (spec.kind) {
    case LayerKind::kDense: {
      TRIB_ASSIGN_OR_RETURN(auto layer,
                            Dense::Create(in.numel(), spec.out_features, max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kConv2D:
    case LayerKind::kConv1D: {
      const ConvTaps t = ConvTapsOf(spec, in);
      const ConvGeometry g = ConvGeometry::Of(t.h, t.w, t.c, t.kh, t.kw, t.ph, t.pw);
      TRIB_ASSIGN_OR_RETURN(auto layer, Conv2D::Create(g, spec.out_channels, max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kDepthwiseConv2D:
      return std::unique_ptr<CudaLayer>(std::make_unique<DepthwiseConv2D>(
          DepthwiseGeometry{in.h, in.w, in.c, spec.kernel, spec.padding}, ctx));
    case LayerKind::kEmbedding:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<Embedding>(in.numel(), spec.vocab, spec.out_features, ctx));
    case LayerKind::kLstm: {
      TRIB_ASSIGN_OR_RETURN(
          auto layer,
          Lstm::Create(RecurrentShape{in.h, in.w * in.c, spec.out_features, spec.return_sequences},
                       max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kGru: {
      TRIB_ASSIGN_OR_RETURN(
          auto layer,
          Gru::Create(RecurrentShape{in.h, in.w * in.c, spec.out_features, spec.return_sequences},
                      max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kMaxPool2D: {
      const PoolGeometry g{in.h, in.w, in.c, spec.kernel, in.h / spec.kernel, in.w / spec.kernel};
      TRIB_ASSIGN_OR_RETURN(auto layer, MaxPool2D::Create(g, max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kReLU:
      return std::unique_ptr<CudaLayer>(std::make_unique<ReLU>(in.numel(), ctx));
    case LayerKind::kGroupNorm:
    case LayerKind::kLayerNorm: {
      const NormGeometry g{in.h * in.w, in.c, spec.kind == LayerKind::kGroupNorm ? spec.groups : 1,
                           spec.kind == LayerKind::kLayerNorm};
      TRIB_ASSIGN_OR_RETURN(auto layer, Norm::Create(g, max_batch, ctx));
      return std::unique_ptr<CudaLayer>(std::move(layer));
    }
    case LayerKind::kAvgPool2D:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<AvgPool2D>(AvgPoolGeometry{in.h, in.w, in.c, spec.kernel, spec.kernel,
                                                      in.h / spec.kernel, in.w / spec.kernel},
                                      ctx));
    case LayerKind::kGlobalAvgPool:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<AvgPool2D>(AvgPoolGeometry{in.h, in.w, in.c, in.h, in.w, 1, 1}, ctx));
    case LayerKind::kSigmoid:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<Activation>(ActivationFn::kSigmoid, in.numel(), ctx));
    case LayerKind::kTanh:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<Activation>(ActivationFn::kTanh, in.numel(), ctx));
    case LayerKind::kGelu:
      return std::unique_ptr<CudaLayer>(
          std::make_unique<Activation>(ActivationFn::kGelu, in.numel(), ctx));
    case LayerKind::kAdd:
      return std::unique_ptr<CudaLayer>(std::make_unique<Add>(in.numel(), ctx));
    case LayerKind::kDropout:
      return std::unique_ptr<CudaLayer>(std::make_unique<Dropout>(spec.rate, in.numel(), ctx));
    case LayerKind::kFlatten:
      return std::unique_ptr<CudaLayer>(std::make_unique<Flatten>());
  }
  return Status::InvalidArgument("unknown layer kind");
}

}  // namespace tributary::cuda
