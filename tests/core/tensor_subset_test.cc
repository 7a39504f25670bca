// TensorSubset (core/tensor_subset.h): a model cut into chosen tensors and the rest joins back
// bit for bit, each part keeps its tensors' names, shapes and order, and bad indices or parts of
// another layout are refused naming what is wrong.
#include <gtest/gtest.h>

#include <numeric>

#include "core/tensor_subset.h"

namespace tributary {
namespace {

ModelWeights Model() {
  ModelWeights w = *ModelWeights::Create(
      {{"a.weight", {2, 3}}, {"a.bias", {3}}, {"b.weight", {3, 2}}, {"b.bias", {2}}});
  std::iota(w.data().begin(), w.data().end(), 0.5f);
  return w;
}

TEST(TensorSubsetTest, PartsKeepTheirTensorsAndJoinBackBitForBit) {
  const ModelWeights w = Model();
  Result<TensorSubset> s = TensorSubset::Create(w, {1, 2});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->selected_floats(), 9u);
  EXPECT_EQ(s->rest_floats(), 8u);
  ModelWeights sel = *s->Selected(w), rest = *s->Rest(w);
  ASSERT_EQ(sel.num_tensors(), 2u);
  EXPECT_EQ(sel.tensors()[0].name, "a.bias");
  EXPECT_EQ(sel.tensors()[1].name, "b.weight");
  EXPECT_EQ(sel.tensors()[1].shape, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(rest.num_tensors(), 2u);
  EXPECT_EQ(rest.tensors()[0].name, "a.weight");
  EXPECT_EQ(rest.tensors()[1].name, "b.bias");
  // a.bias is floats 6-8 of the whole model (values 6.5 ...), b.weight 9-14.
  EXPECT_FLOAT_EQ(sel.data()[0], 6.5f);
  EXPECT_FLOAT_EQ(sel.data()[8], 14.5f);
  EXPECT_FLOAT_EQ(rest.data()[6], 15.5f);  // b.bias after a.weight's 6
  EXPECT_TRUE(sel.same_layout(s->SelectedLayout()));
  EXPECT_TRUE(rest.same_layout(s->RestLayout()));
  Result<ModelWeights> joined = s->Join(sel, rest);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_TRUE(*joined == w);
  EXPECT_EQ(joined->content_hash(), w.content_hash());
}

TEST(TensorSubsetTest, BadIndicesAreRefused) {
  const ModelWeights w = Model();
  EXPECT_NE(TensorSubset::Create(w, {}).status().message().find("at least one tensor"),
            std::string::npos);
  EXPECT_NE(TensorSubset::Create(w, {0, 4}).status().message().find(
                "tensor index 4 (entry 1) is past the model's 4 tensors"),
            std::string::npos);
  EXPECT_NE(TensorSubset::Create(w, {2, 1}).status().message().find(
                "strictly increasing: entry 1 is 1 after 2"),
            std::string::npos);
  EXPECT_FALSE(TensorSubset::Create(w, {1, 1}).ok());
  // Every tensor chosen: the rest is empty and still joins.
  Result<TensorSubset> all = TensorSubset::Create(w, {0, 1, 2, 3});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->rest_floats(), 0u);
  EXPECT_TRUE(*all->Join(*all->Selected(w), *all->Rest(w)) == w);
}

TEST(TensorSubsetTest, PartsOfAnotherLayoutAreRefusedNamingTheTensor) {
  const ModelWeights w = Model();
  TensorSubset s = *TensorSubset::Create(w, {0});
  ModelWeights other = *ModelWeights::Create({{"a.weight", {3, 2}}, {"a.bias", {3}}});
  Status bad = s.Selected(other).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("does not have the layout its tensor subset was made for"),
            std::string::npos)
      << bad.ToString();
  bad = s.Join(other, *s.Rest(w)).status();
  EXPECT_NE(bad.message().find("the federated tensors do not have the subset's layout"),
            std::string::npos)
      << bad.ToString();
  bad = s.Join(*s.Selected(w), *s.Selected(w)).status();
  EXPECT_NE(bad.message().find("the frozen tensors do not have the subset's layout"),
            std::string::npos)
      << bad.ToString();
}

}  // namespace
}  // namespace tributary
