// Env::Default() on a real directory, the FaultInjectionEnv's crash model, and WriteFileAtomic
// crashed at every write point (with an in-place write as the control that the model catches).
#include "core/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/file_util.h"
#include "core/progress.h"
#include "tests/core/fault_injection_env.h"

namespace tributary {
namespace {

using testing::FaultInjectionEnv;

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

TEST(PosixEnvTest, WritesReadsRenamesAndRemoves) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("trib_env_" + std::to_string(::getpid())) / "a" / "b")
                              .string();
  Env* env = Env::Default();
  ASSERT_TRUE(env->CreateDirs(dir).ok());
  const std::string f = dir + "/f", g = dir + "/g";
  {
    auto w = env->NewWritableFile(f);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->Append(Bytes("hello ")).ok());
    ASSERT_TRUE((*w)->Sync().ok());
    ASSERT_TRUE((*w)->Close().ok());
    auto a = env->NewAppendableFile(f);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE((*a)->Append(Bytes("world")).ok());
  }  // closed by the destructor
  EXPECT_EQ(*env->ReadFile(f, 100), Bytes("hello world"));
  EXPECT_EQ(env->ReadFile(f, 5).status().code(), StatusCode::kOutOfRange);
  ASSERT_TRUE(env->RenameFile(f, g).ok());
  EXPECT_FALSE(env->FileExists(f));
  EXPECT_TRUE(env->FileExists(g));
  ASSERT_TRUE(env->SyncDir(dir).ok());
  ASSERT_TRUE(env->RemoveFile(g).ok());
  const Status missing = env->ReadFile(g, 100).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(g), std::string::npos) << missing;
  EXPECT_EQ(env->NewWritableFile(dir + "/no/such/dir/x").status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path().parent_path());
}

TEST(FaultInjectionEnvTest, OnlySyncedDataAndSyncedNamesSurviveACrash) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("d").ok());
  auto w = env.NewWritableFile("d/synced");
  ASSERT_TRUE((*w)->Append(Bytes("durable")).ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE((*w)->Append(Bytes(" and lost")).ok());
  ASSERT_TRUE(env.SyncDir("d").ok());
  auto v = env.NewWritableFile("d/unnamed");  // its data is synced, its name is not
  ASSERT_TRUE((*v)->Append(Bytes("x")).ok());
  ASSERT_TRUE((*v)->Sync().ok());
  EXPECT_EQ(*env.ReadFile("d/synced", 100), Bytes("durable and lost"));
  env.Crash();
  EXPECT_EQ(*env.ReadFile("d/synced", 100), Bytes("durable"));
  EXPECT_FALSE(env.FileExists("d/unnamed"));
  EXPECT_EQ(env.Files(), std::vector<std::string>{"d/synced"});
}

TEST(FaultInjectionEnvTest, ARenameIsUndoneByACrashUntilItsDirectoryIsSynced) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("d").ok());
  ASSERT_TRUE(WriteFileAtomic(&env, "d/f", "old").ok());
  auto w = env.NewWritableFile("d/t");
  ASSERT_TRUE((*w)->Append(Bytes("new")).ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE(env.RenameFile("d/t", "d/f").ok());
  EXPECT_EQ(*env.ReadFile("d/f", 100), Bytes("new"));
  env.Crash();
  EXPECT_EQ(*env.ReadFile("d/f", 100), Bytes("old"));
}

TEST(FaultInjectionEnvTest, WritesFailFromTheCrashPointOnAndChangeNothing) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDirs("d").ok());
  env.FailAfter(2);  // create, append; then the sync fails
  auto w = env.NewWritableFile("d/f");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->Append(Bytes("abc")).ok());
  const Status s = (*w)->Sync();
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("simulated crash before syncing d/f"), std::string::npos) << s;
  EXPECT_FALSE((*w)->Append(Bytes("def")).ok());
  EXPECT_EQ(*env.ReadFile("d/f", 100), Bytes("abc"));
  env.Crash();  // the name was never synced
  EXPECT_FALSE(env.FileExists("d/f"));
  EXPECT_TRUE(WriteFileAtomic(&env, "d/f", "ok").ok()) << "Crash() re-enables writes";
}

// Writes `text` to `path` through `write` with every possible crash point, and returns what a
// reader finds after each crash, given that `path` held `before`.
template <class Write>
std::vector<std::string> AfterEveryCrash(Write write, const std::string& before,
                                         const std::string& text, int64_t* points) {
  std::vector<std::string> seen;
  for (int64_t n = 0;; ++n) {
    FaultInjectionEnv env;
    EXPECT_TRUE(env.CreateDirs("run").ok());
    EXPECT_TRUE(WriteFileAtomic(&env, "run/state", before).ok());
    env.FailAfter(n);
    const Status s = write(env, "run/state", text);
    env.Crash();
    Result<std::vector<uint8_t>> got = env.ReadFile("run/state", 1 << 20);
    seen.push_back(got.ok() ? std::string(got->begin(), got->end())
                            : "<" + got.status().ToString() + ">");
    if (s.ok()) {
      *points = n;
      return seen;
    }
  }
}

TEST(WriteFileAtomicTest, ACrashAtAnyWritePointLeavesTheOldOrTheNewContents) {
  int64_t points = 0;
  const std::vector<std::string> seen =
      AfterEveryCrash([](Env& env, const std::string& path,
                         const std::string& text) { return WriteFileAtomic(&env, path, text); },
                      "old contents", "new contents", &points);
  // create, append, sync, close, rename, directory sync
  EXPECT_EQ(points, 6);
  ASSERT_EQ(seen.size(), 7u);
  for (size_t i = 0; i + 1 < seen.size(); ++i)
    EXPECT_EQ(seen[i], "old contents") << "crash after write point " << i;
  EXPECT_EQ(seen.back(), "new contents");
}

TEST(WriteFileAtomicTest, TheControlAnInPlaceRewriteLosesTheFileAtSomeCrashPoint) {
  int64_t points = 0;
  const std::vector<std::string> seen = AfterEveryCrash(
      [](Env& env, const std::string& path, const std::string& text) -> Status {
        TRIB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env.NewWritableFile(path));
        TRIB_RETURN_IF_ERROR(
            f->Append(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
        TRIB_RETURN_IF_ERROR(f->Sync());
        return f->Close();
      },
      "old contents", "new contents", &points);
  // Crashing after the truncation leaves an empty file: neither the old nor the new contents.
  EXPECT_NE(std::find(seen.begin(), seen.end(), ""), seen.end());
}

// A large file written with progress: appended in 16 MiB pieces, each one counted, and as
// crash-safe as one append (the old contents until the rename is durable).
TEST(WriteFileAtomicTest, WithProgressItAppendsInPiecesAndStaysCrashSafe) {
  std::vector<uint8_t> big(2 * kProgressPieceBytes + 5);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  Progress::Options every_piece;
  every_piece.quiet = every_piece.interval = Progress::Duration::zero();
  every_piece.check_every = 1;
  for (int64_t n = 0;; ++n) {
    FaultInjectionEnv env;
    ASSERT_TRUE(env.CreateDirs("run").ok());
    ASSERT_TRUE(WriteFileAtomic(&env, "run/model", "old").ok());
    env.FailAfter(n);
    Progress progress("writing run/model", big.size(), "bytes", every_piece);
    const Status s = WriteFileAtomic(&env, "run/model", big, &progress);
    env.Crash();
    Result<std::vector<uint8_t>> got = env.ReadFile("run/model", uint64_t{1} << 30);
    ASSERT_TRUE(got.ok()) << got.status();
    if (!s.ok()) {
      EXPECT_EQ(std::string(got->begin(), got->end()), "old") << "crash after write point " << n;
      continue;
    }
    EXPECT_TRUE(*got == big);
    // create, three appends, sync, close, rename, directory sync
    EXPECT_EQ(n, 8);
    EXPECT_EQ(progress.done(), big.size());
    EXPECT_EQ(progress.lines(), 3u);  // one per piece
    break;
  }
}

// The check programs make of the files they were given: each reason named, with the label.
TEST(CheckReadableFileTest, NamesTheLabelThePathAndWhy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("trib_readable_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "ok.pem").string();
  ASSERT_TRUE(WriteFileAtomic(file, std::string_view("pem")).ok());
  EXPECT_TRUE(CheckReadableFile("key 'tls.ca'", file).ok());
  const Status missing = CheckReadableFile("key 'tls.ca'", (dir / "no.pem").string());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "key 'tls.ca': cannot read " + (dir / "no.pem").string() + ": no such file");
  const Status folder = CheckReadableFile("tls.cert (--cert)", dir.string());
  EXPECT_EQ(folder.message(),
            "tls.cert (--cert): cannot read " + dir.string() + ": a directory, not a file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tributary
