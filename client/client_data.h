// The local data of a tributary-client process: its share of a data set split among
// data.num_clients clients.
//
// Training data: data.dataset's training split (Fashion-MNIST from data.dir, the synthetic set, or
// the user's data.train with data.dataset = "files"); the first data.train_examples examples when
// that is > 0; partitioned with data.partition ("iid", "dirichlet:ALPHA", "shards:K", "labels:K",
// "quantity:BETA", any of them with "+noise:SIGMA": train/data/partition.h) under data.seed, of
// which this client takes share data.client_index (with its feature noise, if any). Every client
// computes the same partition from the same settings, so the shares never overlap, and they are the
// simulator's virtual clients' shares. Evaluation data: the test split cut IID into num_clients
// shares with the same seed; this client evaluates on its own share (capped at data.eval_examples),
// so a federated evaluation weighted by num_examples covers the whole test set once. With "files"
// and no data.test there is no evaluation data and evaluation requests are answered with an error.
#pragma once

#include <memory>
#include <string>

#include "client/client_config.h"
#include "train/data/dataset.h"
#include "tributary/result.h"

namespace tributary {

struct ClientData {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> eval;  // may be null
  std::string description;              // one line for the start-up message
};

Result<ClientData> LoadClientData(const ClientConfig& c);

}  // namespace tributary
