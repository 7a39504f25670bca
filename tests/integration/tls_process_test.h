// TlsProcessTest: the fixture of the gtest suites that run the real binaries over mutual TLS on
// loopback (TRIBUTARY_CERTS_BIN and TRIBUTARY_COORDINATOR_BIN name them): a fresh directory per
// test, kept when the test fails; a PKI made with tributary-certs (a CA and the coordinator's
// certificate for localhost and 127.0.0.1; client certificates on demand); and the coordinator
// started on a config file until it writes its ready file (its host:port).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace tributary::testing {

class TlsProcessTest : public ::testing::Test {
 protected:
  // Directories are named /tmp/<prefix><test name>_<pid>.
  explicit TlsProcessTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Certs({"init", "--dir", pki()});
    Certs({"server", "--host", "localhost", "--ip", "127.0.0.1", "--dir", pki()});
  }
  void TearDown() override {
    clients_.clear();
    coordinator_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::string pki() const { return (dir_ / "pki").string(); }

  void Certs(std::vector<std::string> args) {
    args.insert(args.begin(), TRIBUTARY_CERTS_BIN);
    Process p(args, (dir_ / "certs.log").string());
    ASSERT_EQ(p.Wait(std::chrono::seconds(30)), 0) << p.Log();
  }

  // The coordinator's [tls] section.
  std::string TlsToml() const {
    return "[tls]\nca = \"" + pki() + "/ca.crt\"\ncert = \"" + pki() + "/server.crt\"\nkey = \"" +
           pki() + "/server.key\"\n";
  }

  // --coordinator, --ca, --cert and --key for client `id` (its certificate made on first use).
  std::vector<std::string> ClientTlsArgs(const std::string& addr, const std::string& id) {
    if (!std::filesystem::exists(std::filesystem::path(pki()) / "clients" / (id + ".crt")))
      Certs({"client", "--id", id, "--dir", pki()});
    return {"--coordinator", addr,
            "--ca",          pki() + "/ca.crt",
            "--cert",        pki() + "/clients/" + id + ".crt",
            "--key",         pki() + "/clients/" + id + ".key"};
  }

  // Starts tributary-coordinator with `args` (its config names `ready` as output.ready_file),
  // its output in `log`, and waits until it listens; returns its address.
  std::string StartCoordinatorProcess(std::vector<std::string> args, const std::string& log,
                                      const std::filesystem::path& ready) {
    std::filesystem::remove(ready);
    args.insert(args.begin(), TRIBUTARY_COORDINATOR_BIN);
    coordinator_ = std::make_unique<Process>(args, (dir_ / log).string());
    EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(ready) || !coordinator_->running(); },
                        std::chrono::seconds(30)));
    std::ifstream in(ready);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string addr = ss.str();
    while (!addr.empty() && addr.back() == '\n') addr.pop_back();
    EXPECT_FALSE(addr.empty()) << coordinator_->Log();
    return addr;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> clients_;

 private:
  std::string prefix_;
};

}  // namespace tributary::testing
