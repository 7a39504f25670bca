// tributary-certs: provisions the private CA and the certificates of a Tributary deployment.
//
//   tributary-certs init   [--dir D] [--name NAME] [--days N] [--force]  -> D/ca.crt, D/ca.key
//   tributary-certs server --host NAME... [--ip ADDR]... [--dir D] [--days N] [--force]
//                                                               -> D/server.crt, D/server.key
//   tributary-certs client --id ID [--dir D] [--days N] [--force]
//                                                               -> D/clients/ID.crt,
//                                                               D/clients/ID.key
//   tributary-certs aggregator --id ID --host NAME... [--ip ADDR]... [--dir D] [--days N] [--force]
//                                                               -> D/aggregators/ID.crt,
//                                                               D/aggregators/ID.key
// Keys are created with mode 0600. Existing files are never replaced without --force. Errors go
// to stderr with a non-zero exit status.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "crypto/cert_authority.h"
#include "crypto/client_id.h"
#include "crypto/pem.h"

namespace tributary {
namespace {

namespace fs = std::filesystem;

struct CommonFlags {
  std::string dir = ".";
  int64_t days = 365;
  bool force = false;
};

std::string Join(const std::vector<std::string>& items, const std::string& prefix) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ", ";
    out += prefix + s;
  }
  return out;
}

Status EnsureDirectory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument(dir.string() + " exists and is not a directory");
  return Status::Ok();
}

Result<PemPair> LoadCa(const fs::path& dir) {
  const std::string cert = (dir / "ca.crt").string();
  const std::string key = (dir / "ca.key").string();
  Result<PemPair> ca = LoadPemPair(cert, key);
  if (!ca.ok() && ca.status().code() == StatusCode::kNotFound)
    return Status::NotFound(ca.status().message() + " (run `tributary-certs init --dir " +
                            dir.string() + "` first)");
  return ca;
}

// Writes the pair and prints one line per file.
Status WriteAndReport(const PemPair& pair, const fs::path& cert_path, const fs::path& key_path,
                      bool force, const std::string& what) {
  TRIB_RETURN_IF_ERROR(WritePemPair(pair, cert_path.string(), key_path.string(), force));
  TRIB_ASSIGN_OR_RETURN(CertificateInfo info, DescribeCertificate(pair.cert_pem));
  std::string names = Join(info.dns_names, "DNS:");
  const std::string ips = Join(info.ip_addresses, "IP:");
  const std::string uris = Join(info.uris, "URI:");
  for (const std::string* part : {&ips, &uris}) {
    if (part->empty()) continue;
    if (!names.empty()) names += ", ";
    names += *part;
  }
  std::printf("wrote %s  (%s certificate, CN=%s%s%s, valid until %s)\n", cert_path.c_str(),
              what.c_str(), info.subject_cn.c_str(), names.empty() ? "" : ", ", names.c_str(),
              info.not_after.c_str());
  std::printf("wrote %s  (%s private key, mode 0600; keep it secret)\n", key_path.c_str(),
              what.c_str());
  return Status::Ok();
}

Status RunInit(const CommonFlags& flags, const std::string& name) {
  const fs::path dir(flags.dir);
  TRIB_RETURN_IF_ERROR(EnsureDirectory(dir));
  CertOptions options;
  options.valid_days = flags.days;
  TRIB_ASSIGN_OR_RETURN(PemPair ca, MakeCaCertificate(name, options));
  Status s = WriteAndReport(ca, dir / "ca.crt", dir / "ca.key", flags.force, "CA");
  if (s.code() == StatusCode::kFailedPrecondition)
    return Status::FailedPrecondition("a CA already exists in " + dir.string() + " (" +
                                      s.message() +
                                      "); replacing it invalidates every certificate it issued");
  return s;
}

Status RunServer(const CommonFlags& flags, const std::vector<std::string>& hosts,
                 const std::vector<std::string>& ips) {
  if (hosts.empty() && ips.empty())
    return Status::InvalidArgument("give at least one --host NAME or --ip ADDR");
  const fs::path dir(flags.dir);
  TRIB_ASSIGN_OR_RETURN(PemPair ca, LoadCa(dir));
  CertOptions options;
  options.valid_days = flags.days;
  TRIB_ASSIGN_OR_RETURN(PemPair server, MakeServerCertificate(ca, hosts, ips, options));
  return WriteAndReport(server, dir / "server.crt", dir / "server.key", flags.force, "server");
}

Status RunClient(const CommonFlags& flags, const std::string& id) {
  // Validate before touching the file system: the id becomes a file name.
  TRIB_RETURN_IF_ERROR(ValidateClientId(id));
  const fs::path dir(flags.dir);
  TRIB_ASSIGN_OR_RETURN(PemPair ca, LoadCa(dir));
  CertOptions options;
  options.valid_days = flags.days;
  TRIB_ASSIGN_OR_RETURN(PemPair client, MakeClientCertificate(ca, id, options));
  const fs::path clients = dir / "clients";
  TRIB_RETURN_IF_ERROR(EnsureDirectory(clients));
  return WriteAndReport(client, clients / (id + ".crt"), clients / (id + ".key"), flags.force,
                        "client");
}

Status RunAggregator(const CommonFlags& flags, const std::string& id,
                     const std::vector<std::string>& hosts, const std::vector<std::string>& ips) {
  TRIB_RETURN_IF_ERROR(ValidateClientId(id));
  if (hosts.empty() && ips.empty())
    return Status::InvalidArgument(
        "give at least one --host NAME or --ip ADDR: the aggregator's clients connect to it");
  const fs::path dir(flags.dir);
  TRIB_ASSIGN_OR_RETURN(PemPair ca, LoadCa(dir));
  CertOptions options;
  options.valid_days = flags.days;
  TRIB_ASSIGN_OR_RETURN(PemPair pair, MakeAggregatorCertificate(ca, id, hosts, ips, options));
  const fs::path out = dir / "aggregators";
  TRIB_RETURN_IF_ERROR(EnsureDirectory(out));
  return WriteAndReport(pair, out / (id + ".crt"), out / (id + ".key"), flags.force, "aggregator");
}

void AddCommonFlags(CLI::App* cmd, CommonFlags* flags, int64_t default_days) {
  flags->days = default_days;
  cmd->add_option("--dir", flags->dir, "Directory holding ca.crt/ca.key and the output")
      ->capture_default_str();
  cmd->add_option("--days", flags->days, "Validity in days")
      ->check(CLI::Range(int64_t{1}, int64_t{36500}))
      ->capture_default_str();
  cmd->add_flag("--force", flags->force, "Replace existing files");
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tributary-certs: make the CA, server, client and aggregator certificates for mutual TLS"};
  app.require_subcommand(1);

  CommonFlags init_flags, server_flags, client_flags, aggregator_flags;
  std::string ca_name = "Tributary CA";
  CLI::App* init = app.add_subcommand("init", "Make a new CA: <dir>/ca.crt and <dir>/ca.key");
  AddCommonFlags(init, &init_flags, 3650);
  init->add_option("--name", ca_name, "CA common name (1..64 printable characters)")
      ->capture_default_str();

  std::vector<std::string> hosts, ips;
  CLI::App* server = app.add_subcommand(
      "server", "Make <dir>/server.crt and <dir>/server.key, signed by the CA in <dir>");
  AddCommonFlags(server, &server_flags, 365);
  server->add_option("--host", hosts, "DNS name clients connect to (repeatable)");
  server->add_option("--ip", ips, "IP address clients connect to (repeatable)");

  std::string client_id;
  CLI::App* client = app.add_subcommand(
      "client", "Make <dir>/clients/<id>.crt and .key, signed by the CA in <dir>");
  AddCommonFlags(client, &client_flags, 365);
  client->add_option("--id", client_id, "Client id: 1..64 characters of A-Z a-z 0-9 . _ -")
      ->required();

  std::string aggregator_id;
  std::vector<std::string> aggregator_hosts, aggregator_ips;
  CLI::App* aggregator = app.add_subcommand("aggregator",
                                            "Make <dir>/aggregators/<id>.crt and .key for "
                                            "tributary-aggregator, signed by the CA in <dir>");
  AddCommonFlags(aggregator, &aggregator_flags, 365);
  aggregator
      ->add_option("--id", aggregator_id, "Aggregator id: 1..64 characters of A-Z a-z 0-9 . _ -")
      ->required();
  aggregator->add_option("--host", aggregator_hosts, "DNS name clients connect to (repeatable)");
  aggregator->add_option("--ip", aggregator_ips, "IP address clients connect to (repeatable)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // A usage error reads like every other error of this program (docs/operations.md).
    std::fprintf(stderr, "tributary-certs: error: %s\nRun with --help for more information.\n",
                 e.what());
    return 2;
  }

  Status status;
  if (init->parsed())
    status = RunInit(init_flags, ca_name);
  else if (server->parsed())
    status = RunServer(server_flags, hosts, ips);
  else if (client->parsed())
    status = RunClient(client_flags, client_id);
  else if (aggregator->parsed())
    status = RunAggregator(aggregator_flags, aggregator_id, aggregator_hosts, aggregator_ips);
  if (!status.ok()) {
    std::fprintf(stderr, "tributary-certs: error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  try {
    return tributary::Main(argc, argv);
  } catch (const std::exception& e) {  // e.g. bad_alloc; every expected failure is a Status
    std::fprintf(stderr, "tributary-certs: error: %s\n", e.what());
    return 1;
  }
}
