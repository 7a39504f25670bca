// FormatBytes and FormatDuration (core/human_units.h): the unit that fits, chosen after rounding.
#include "core/human_units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace tributary {
namespace {

TEST(HumanUnitsTest, BytesInTheUnitThatFits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(780), "780 B");  // a 780-byte update, not "0.0 MB"
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(33177.6), "32.4 KiB");  // a fractional average
  EXPECT_EQ(FormatBytes(1048575), "1.0 MiB");   // not "1024.0 KiB"
  EXPECT_EQ(FormatBytes(796957000), "760.0 MiB");
  EXPECT_EQ(FormatBytes(8.0e6), "7.6 MiB");
  EXPECT_EQ(FormatBytes(3.0 * (uint64_t{1} << 30)), "3.0 GiB");
  EXPECT_EQ(FormatBytes(1.5 * static_cast<double>(uint64_t{1} << 40)), "1.5 TiB");
  EXPECT_EQ(FormatBytes(static_cast<double>(std::numeric_limits<uint64_t>::max())), "16.0 EiB");
  EXPECT_EQ(FormatBytes(-1536), "-1.5 KiB");
  EXPECT_EQ(FormatBytes(std::nan("")), "n/a");
}

TEST(HumanUnitsTest, DurationsInTheUnitThatFits) {
  EXPECT_EQ(FormatDuration(0), "0 s");
  EXPECT_EQ(FormatDuration(0.000412), "412 \xC2\xB5s");
  EXPECT_EQ(FormatDuration(0.0009996), "1.0 ms");  // not "1000 µs"
  EXPECT_EQ(FormatDuration(0.002056135999964681), "2.1 ms");
  EXPECT_EQ(FormatDuration(0.0996), "100 ms");
  EXPECT_EQ(FormatDuration(0.250), "250 ms");
  EXPECT_EQ(FormatDuration(0.9996), "1.00 s");  // not "1000 ms"
  EXPECT_EQ(FormatDuration(2.3), "2.30 s");
  EXPECT_EQ(FormatDuration(9.996), "10.0 s");
  EXPECT_EQ(FormatDuration(42.24), "42.2 s");
  EXPECT_EQ(FormatDuration(59.96), "1.0 min");
  EXPECT_EQ(FormatDuration(150), "2.5 min");
  EXPECT_EQ(FormatDuration(3597), "1.0 h");
  EXPECT_EQ(FormatDuration(5400), "1.5 h");
  EXPECT_EQ(FormatDuration(-2.3), "-2.30 s");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "n/a");
}

}  // namespace
}  // namespace tributary
