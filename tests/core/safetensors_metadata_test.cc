// MetadataU64: a number in a safetensors file's metadata is decimal digits only; everything else is
// a Corruption naming the file and the key (the checkpoint and the client's state files read their
// counters through it).
#include "core/safetensors_metadata.h"

#include <gtest/gtest.h>

#include <string>

namespace tributary {
namespace {

TEST(MetadataU64Test, DigitsAreTheNumberAndAnythingElseIsCorruptionNamingFileAndKey) {
  SafetensorsMetadata meta = {{"n", "42"}, {"max", "18446744073709551615"}};
  ASSERT_TRUE(MetadataU64(meta, "n", "f.safetensors").ok());
  EXPECT_EQ(*MetadataU64(meta, "n", "f.safetensors"), 42u);
  EXPECT_EQ(*MetadataU64(meta, "max", "f.safetensors"), 18446744073709551615u);

  Result<uint64_t> missing = MetadataU64(meta, "rounds_done", "dir/f.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(missing.status().message(), "dir/f.safetensors: the metadata lacks 'rounds_done'");

  // std::stoull would take the first four (as 2^64 - 1, 1, 1 and 12).
  for (const std::string bad :
       {"-1", " 1", "+1", "12abc", "", "18446744073709551616", "0x10", "1.0"}) {
    meta["n"] = bad;
    Result<uint64_t> r = MetadataU64(meta, "n", "f.safetensors");
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad;
    EXPECT_EQ(r.status().message(),
              "f.safetensors: the metadata's 'n' is not a number: '" + bad + "'");
  }
  // A long value is cut to 64 characters in the message.
  meta["n"] = std::string(1000, 'x');
  const std::string message = MetadataU64(meta, "n", "f").status().message();
  EXPECT_EQ(message, "f: the metadata's 'n' is not a number: '" + std::string(64, 'x') + "'");
}

}  // namespace
}  // namespace tributary
