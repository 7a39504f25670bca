// ParseWhole: the one reading of a number from outside (keys given as text, specs, metadata, client
// ids, ports), the same whatever locale an embedding app set.
#include "core/parse_number.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <clocale>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/config_schema.h"

namespace tributary {
namespace {

TEST(ParseWholeTest, IntegersAreDecimalDigitsWithAMinusOnlyWhereSigned) {
  EXPECT_EQ(ParseWhole<int64_t>("42"), 42);
  EXPECT_EQ(ParseWhole<int64_t>("-7"), -7);
  EXPECT_EQ(ParseWhole<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseWhole<uint16_t>("65535"), 65535);
  EXPECT_EQ(ParseWhole<uint16_t>("0"), 0);
  for (const char* bad : {"", "-7", "+7", " 7", "7 ", "7x", "0x10", "1.5", "1e3"})
    EXPECT_FALSE(ParseWhole<uint64_t>(bad)) << "'" << bad << "'";
  EXPECT_FALSE(ParseWhole<uint64_t>("18446744073709551616"));  // out of range, not wrapped
  EXPECT_FALSE(ParseWhole<uint16_t>("65536"));
  EXPECT_FALSE(ParseWhole<int64_t>("9223372036854775808"));
}

TEST(ParseWholeTest, FloatingPointValuesAreFiniteDecimalsOrExponents) {
  EXPECT_EQ(ParseWhole<double>("0.5"), 0.5);
  EXPECT_EQ(ParseWhole<double>("-0.25"), -0.25);
  EXPECT_EQ(ParseWhole<double>("1e-3"), 1e-3);
  EXPECT_EQ(ParseWhole<double>("3"), 3.0);
  EXPECT_EQ(ParseWhole<float>("0.05"), 0.05f);
  for (const char* bad :
       {"", "inf", "-inf", "nan", "1e999", "0,5", "+0.5", " 0.5", "0.5 ", "0x1p3", "0.5.1", "e3"})
    EXPECT_FALSE(ParseWhole<double>(bad)) << "'" << bad << "'";
}

// A locale whose decimal point is a comma, compiled from a source of LC_NUMERIC alone with glibc's
// localedef (no locale package needed), and set for LC_NUMERIC while the object lives.
class DecimalCommaLocale {
 public:
  DecimalCommaLocale() {
    char tmpl[] = "/tmp/trib_locale_XXXXXX";
    if (!mkdtemp(tmpl)) return;
    dir_ = tmpl;
    const std::string source = dir_ + "/comma.src";
    std::ofstream(source) << "LC_NUMERIC\ndecimal_point \",\"\nthousands_sep \".\"\n"
                             "grouping 3;3\nEND LC_NUMERIC\n";
    // -c: the other categories are missing on purpose (localedef then exits 1 with warnings).
    const std::string command =
        "localedef -c -i '" + source + "' '" + dir_ + "/xx_COMMA' >/dev/null 2>&1";
    [[maybe_unused]] const int rc = std::system(command.c_str());
    setenv("LOCPATH", dir_.c_str(), 1);
    set_ = std::setlocale(LC_NUMERIC, "xx_COMMA") != nullptr;
  }
  ~DecimalCommaLocale() {
    std::setlocale(LC_NUMERIC, "C");
    unsetenv("LOCPATH");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool set() const { return set_; }

 private:
  std::string dir_;
  bool set_ = false;
};

// An app (a Python notebook, a desktop app) that sets a decimal-comma LC_NUMERIC still gets 0.05
// from "0.05": ConfigSchema's text values (--set, tributary.simulate(config=...)) used to go
// through strtod, which reads "0" there and refused the rest.
TEST(ParseWholeTest, UnderADecimalCommaLocaleADecimalPointStillParses) {
  DecimalCommaLocale comma;
  // glibc's localedef (libc-bin, on every Debian machine) builds it on x86-64 and under qemu.
  ASSERT_TRUE(comma.set()) << "localedef could not make the decimal-comma test locale";
  ASSERT_EQ(std::strtod("0.5", nullptr), 0.0) << "the locale is not a decimal-comma one";
  EXPECT_EQ(ParseWhole<double>("0.5"), 0.5);
  double lr = 0;
  std::chrono::milliseconds timeout{0};
  ConfigSchema schema("tributary-test");
  schema.Bind("fit.lr", &lr, "learning rate");
  schema.Bind("run.round_timeout_s", &timeout, "deadline");
  Status s = schema.Set("fit.lr", "0.05", "--set");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(lr, 0.05);
  s = schema.Set("run.round_timeout_s", "2.5", "--set");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(timeout, std::chrono::milliseconds(2'500));
}

}  // namespace
}  // namespace tributary
