#include "compression/codec_spec.h"

#include <gtest/gtest.h>

#include "compression/codec.h"

namespace tributary {
namespace {

std::string Canon(std::string_view spec) {
  Result<PipelineSpec> p = ParseCodecSpec(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? p->Canonical() : "";
}

std::string Error(std::string_view spec) {
  Result<PipelineSpec> p = ParseCodecSpec(spec);
  EXPECT_FALSE(p.ok()) << spec << " parsed";
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  return p.status().message();
}

TEST(CodecSpecTest, CanonicalForms) {
  EXPECT_EQ(Canon("dense"), "dense");
  EXPECT_EQ(Canon("q8"), "q8");
  EXPECT_EQ(Canon("q1"), "q1");
  EXPECT_EQ(Canon("sign"), "sign");
  EXPECT_EQ(Canon("topk(0.01)"), "topk(0.01)");
  EXPECT_EQ(Canon("topk(fraction=0.010)"), "topk(0.01)");
  EXPECT_EQ(Canon(" topk( k=1000 ) "), "topk(k=1000)");
  EXPECT_EQ(Canon("topk(0.01,ef=1)"), "topk(0.01)");
  EXPECT_EQ(Canon("topk(0.01,ef=0)"), "topk(0.01,ef=0)");
  EXPECT_EQ(Canon("randk(0.25)"), "randk(0.25)");
  EXPECT_EQ(Canon("topk(0.01)+q8+zstd"), "topk(0.01)+q8+zstd");
  EXPECT_EQ(Canon("q4(chunk=512)"), "q4");
  EXPECT_EQ(Canon("q4(chunk=64)+zstd(level=3)"), "q4(chunk=64)+zstd");
  EXPECT_EQ(Canon("sign(ef=1)+zstd(level=9)"), "sign(ef=1)+zstd(level=9)");
  EXPECT_EQ(Canon("zstd"), "zstd");
}

TEST(CodecSpecTest, ParsesStagesAndParameters) {
  PipelineSpec p = *ParseCodecSpec("topk(k=1000)+q4(chunk=128)+zstd(level=7)");
  EXPECT_EQ(p.sparsifier, Sparsifier::kTopK);
  EXPECT_EQ(p.k, 1000u);
  EXPECT_TRUE(p.error_feedback);
  EXPECT_EQ(p.values, ValueCoding::kQuantized);
  EXPECT_EQ(p.bits, 4);
  EXPECT_EQ(p.chunk, 128u);
  EXPECT_TRUE(p.zstd);
  EXPECT_EQ(p.zstd_level, 7);
  EXPECT_EQ(p.KeepCount(10), 10u);
  EXPECT_EQ(p.KeepCount(5000), 1000u);
  PipelineSpec f = *ParseCodecSpec("randk(0.01)");
  EXPECT_FALSE(f.error_feedback);
  EXPECT_EQ(f.KeepCount(1000), 10u);
  EXPECT_EQ(f.KeepCount(149), 1u);  // round(1.49)
  EXPECT_EQ(f.KeepCount(10), 1u);   // never zero
  EXPECT_TRUE(ParseCodecSpec("dense")->is_dense());
}

TEST(CodecSpecTest, ErrorsNameTheProblem) {
  EXPECT_NE(Error("bogus").find("unknown stage 'bogus'"), std::string::npos);
  EXPECT_NE(Error("q8+fancy(3)").find("unknown stage 'fancy'"), std::string::npos);
  EXPECT_NE(Error("topk(0.01,alpha=2)").find("no parameter 'alpha'"), std::string::npos);
  EXPECT_NE(Error("q8(3)").find("takes no positional parameter"), std::string::npos);
  EXPECT_NE(Error("topk(1.5)").find("outside (0, 1]"), std::string::npos);
  EXPECT_NE(Error("topk(0)").find("outside (0, 1]"), std::string::npos);
  EXPECT_NE(Error("topk(abc)").find("is not a number"), std::string::npos);
  EXPECT_NE(Error("topk").find("needs a fraction or k=N"), std::string::npos);
  EXPECT_NE(Error("topk(0.1,k=5)").find("not both"), std::string::npos);
  EXPECT_NE(Error("topk(k=0)").find("outside [1,"), std::string::npos);
  EXPECT_NE(Error("q8(chunk=12)").find("not a multiple of 8"), std::string::npos);
  EXPECT_NE(Error("zstd(level=30)").find("outside [1, 19]"), std::string::npos);
  EXPECT_NE(Error("q8+topk(0.1)").find("must come before 'q8'"), std::string::npos);
  EXPECT_NE(Error("zstd+q8").find("must come before 'zstd'"), std::string::npos);
  EXPECT_NE(Error("q8+q4").find("do the same job"), std::string::npos);
  EXPECT_NE(Error("dense+zstd").find("'dense' is a whole pipeline"), std::string::npos);
  EXPECT_NE(Error("q8+").find("ends with '+'"), std::string::npos);
  EXPECT_NE(Error("topk(0.1").find("has no ')'"), std::string::npos);
  EXPECT_NE(Error("").find("empty spec"), std::string::npos);
  EXPECT_NE(Error("randk(0.1,ef=1)").find("no parameter 'ef'"), std::string::npos);
}

TEST(CodecSpecTest, StageNamesAndNegotiation) {
  EXPECT_EQ(*CodecStageNames("topk(0.01)+q8+zstd"),
            (std::vector<std::string>{"topk", "q8", "zstd"}));
  EXPECT_EQ(*CodecStageNames("dense"), (std::vector<std::string>{"dense"}));
  const std::vector<std::string> all = SupportedCodecs();
  for (const char* spec : {"dense", "q8", "q4", "q2", "q1", "sign", "topk(0.01)", "topk(k=1000)",
                           "randk(0.01)", "topk(0.01)+q8", "topk(0.01)+q8+zstd", "sign+zstd"}) {
    EXPECT_TRUE(CanEncodeCodec(all, spec)) << spec;
    EXPECT_TRUE(MakeCodec(spec).ok()) << spec;
  }
  const std::vector<std::string> old_client = {"dense"};
  EXPECT_TRUE(CanEncodeCodec(old_client, "dense"));
  EXPECT_FALSE(CanEncodeCodec(old_client, "q8"));
  const std::vector<std::string> partial = {"topk", "q8"};
  EXPECT_TRUE(CanEncodeCodec(partial, "topk(0.5)+q8"));
  EXPECT_FALSE(CanEncodeCodec(partial, "topk(0.5)+q8+zstd"));
  EXPECT_FALSE(CanEncodeCodec(all, "nonsense("));
}

TEST(CodecSpecTest, MakeCodecUsesCanonicalSpec) {
  auto c = *MakeCodec("topk( 0.010 )+q8");
  EXPECT_EQ(c->spec(), "topk(0.01)+q8");
  EXPECT_TRUE(c->uses_error_feedback());
  EXPECT_EQ((*MakeCodec("dense"))->spec(), "dense");
  EXPECT_FALSE((*MakeCodec("q8"))->uses_error_feedback());
  Result<std::unique_ptr<Codec>> bad = MakeCodec("q8+lz4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'lz4'"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace tributary
