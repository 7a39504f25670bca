// ModelLayout: the declared fingerprint is ModelWeights' own, and a difference is named on both
// sides in one line.
#include "core/model_layout.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

ModelWeights TwoLayer() {
  return *ModelWeights::Create(
      {{"encoder/0.W", {8, 4}}, {"encoder/0.b", {8}}, {"head:W", {3, 8}}, {"head:b", {3}}});
}

TEST(ModelLayoutTest, TheDeclaredFingerprintIsTheWeightsFingerprint) {
  for (const ModelWeights& w :
       {TwoLayer(), *ModelWeights::Create({{"w", {20}}, {"b", {}}}), ModelWeights()}) {
    const ModelLayout layout = LayoutOf(w);
    ASSERT_EQ(layout.size(), w.num_tensors());
    EXPECT_EQ(LayoutFingerprint(layout), w.fingerprint());
  }
  // Names, shapes, order and dtype all count.
  const ModelLayout base = LayoutOf(TwoLayer());
  ModelLayout renamed = base, reshaped = base, reordered = base, retyped = base;
  renamed[1].name = "encoder/0.bias";
  reshaped[2].shape = {8, 3};
  std::swap(reordered[0], reordered[1]);
  retyped[3].dtype = "F16";
  for (const ModelLayout& other : {renamed, reshaped, reordered, retyped})
    EXPECT_NE(LayoutFingerprint(other), LayoutFingerprint(base));
}

TEST(ModelLayoutTest, TheFirstDifferenceIsNamedOnBothSides) {
  const ModelLayout a = LayoutOf(TwoLayer());
  EXPECT_EQ(LayoutDifference(a, "the run", a, "the client"), "");

  ModelLayout b = a;
  b[2].shape = {8, 3};
  EXPECT_EQ(LayoutDifference(a, "the run", b, "the client"),
            "tensor 2 is 'head:W' [3, 8] F32 in the run and 'head:W' [8, 3] F32 in the client");

  b = a;
  b[3].dtype = "F64";
  EXPECT_EQ(LayoutDifference(a, "A", b, "B"),
            "tensor 3 is 'head:b' [3] F32 in A and 'head:b' [3] F64 in B");

  b = a;
  std::swap(b[0], b[1]);
  EXPECT_EQ(LayoutDifference(a, "A", b, "B"),
            "tensor 0 is 'encoder/0.W' [8, 4] F32 in A and 'encoder/0.b' [8] F32 in B (the same "
            "tensors in another order: the order is part of the layout)");

  b = a;
  b.pop_back();
  EXPECT_EQ(LayoutDifference(a, "A", b, "B"),
            "B has 3 tensors; A has more, starting with tensor 3 'head:b' [3] F32");
  EXPECT_EQ(LayoutDifference(b, "A", a, "B"),
            "A has 3 tensors; B has more, starting with tensor 3 'head:b' [3] F32");
  EXPECT_EQ(DescribeTensor({"scalar", "F32", {}}), "'scalar' [] F32");
}

}  // namespace
}  // namespace tributary
