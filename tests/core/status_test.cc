#include "tributary/result.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  TRIB_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = Status::Corruption("bad magic in f.idx");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "Corruption: bad magic in f.idx");
  EXPECT_EQ(s.WithContext("loading").message(), "loading: bad magic in f.idx");
}

TEST(ResultTest, PropagatesValueAndError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_EQ(Result<int>(Status::Ok()).status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace tributary
