#!/usr/bin/python3
"""A plain PyTorch FedAvg loop: the script a user would otherwise write, as the reference for
tributary-sim (bench/sim/compare_torch.sh runs both).

It trains the clients and examples of a plan written by bench/sim/export_plan (the partition and the
clients selected in each round of a tributary-sim config, exactly), with the config's hyperparameters:
the 'mlp' (784-200-200-10, ReLU, PyTorch's default init), Fashion-MNIST from the IDX files with pixels
/ 255, each selected client running `epochs` of SGD (batch, lr, momentum, weight decay; a fresh
optimizer per client and round, shuffled every epoch, the last partial batch kept), the server
averaging the returned models weighted by each client's number of examples, and the global model
evaluated on the whole test set after every round.

Runs on Debian's python3-torch (/usr/bin/python3) with torch.set_num_threads(--threads, default 2).
Wall time is counted from the first round (data loading excluded), as tributary-sim counts it.
Prints one line per round and rewrites --out after every round (JSON: rounds with test accuracy and wall
clock, totals), so a run cut short still leaves its rounds.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise SystemExit(f"torch_fedavg: {stem}[.gz] not found in {data_dir}")


def load_split(data_dir, prefix, limit):
    x = read_idx(find(data_dir, f"{prefix}-images-idx3-ubyte"))
    y = read_idx(find(data_dir, f"{prefix}-labels-idx1-ubyte"))
    if limit > 0:
        x, y = x[:limit], y[:limit]
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


def make_model():
    return nn.Sequential(nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(), nn.Linear(200, 10))


def local_fit(model, global_state, x, y, fit, gen):
    model.load_state_dict(global_state)
    opt = torch.optim.SGD(model.parameters(), lr=fit["lr"], momentum=fit["momentum"],
                          weight_decay=fit["weight_decay"])
    loss_fn = nn.CrossEntropyLoss()
    n, b = len(y), fit["batch_size"]
    for _ in range(fit["epochs"]):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, b):
            idx = perm[i:i + b]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@torch.no_grad()
def evaluate(model, x, y, batch=1000):
    correct, loss_sum = 0, 0.0
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    for i in range(0, len(y), batch):
        out = model(x[i:i + batch])
        loss_sum += loss_fn(out, y[i:i + batch]).item()
        correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(y), loss_sum / len(y)


def write_out(path, rounds, t0, target, target_round, target_wall):
    totals = {"wall_seconds": rounds[-1]["wall_clock"], "final_test_accuracy": rounds[-1]["test_accuracy"],
              "target_accuracy": target, "target_round": target_round, "target_wall_seconds": target_wall,
              "threads": torch.get_num_threads(), "torch_version": torch.__version__}
    with open(path + ".tmp", "w") as f:
        json.dump({"rounds": rounds, "totals": totals}, f)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", required=True, help="JSON from export_plan")
    ap.add_argument("--out", required=True, help="where to write the result JSON")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", default="", help="default: the plan's data.dir, else Debian's")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    with open(args.plan) as f:
        plan = json.load(f)
    # The plan's config holds every tributary-sim key by its dotted name (run.model, fit.lr, ...).
    cfg = plan["config"]
    fit = {k[len("fit."):]: v for k, v in cfg.items() if k.startswith("fit.")}
    if cfg["run.model"] != "mlp" or cfg["data.dataset"] != "fashion-mnist":
        raise SystemExit("torch_fedavg: only model 'mlp' on 'fashion-mnist' is implemented")
    if cfg["run.strategy"] != "fedavg" or cfg["run.codec"] != "dense" or fit["proximal_mu"] != 0 or fit["max_steps"] != 0:
        raise SystemExit("torch_fedavg: only strategy fedavg, codec dense, no proximal term, no max_steps")
    data_dir = args.data_dir or cfg["data.dir"] or "/usr/share/datasets/fashion-mnist"
    x_train, y_train = load_split(data_dir, "train", cfg["data.train_examples"])
    x_test, y_test = load_split(data_dir, "t10k", cfg["data.test_examples"])
    if len(y_train) != plan["train_size"] or len(y_test) != plan["test_size"]:
        raise SystemExit("torch_fedavg: the data set sizes differ from the plan's")
    partition = [torch.tensor(p, dtype=torch.int64) for p in plan["partition"]]
    selection = plan["selection"]
    target = cfg["sim.target_accuracy"]

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    global_model, local_model = make_model(), make_model()
    print(f"torch_fedavg: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{len(partition)} clients, {len(selection)} rounds, epochs {fit['epochs']}, batch {fit['batch_size']}, "
          f"lr {fit['lr']}, momentum {fit['momentum']}", flush=True)
    rounds, target_round, target_wall = [], 0, 0.0
    t0 = time.perf_counter()
    for r, clients in enumerate(selection, start=1):
        tr = time.perf_counter()
        global_state = {k: v.detach().clone() for k, v in global_model.state_dict().items()}
        acc_state, total = None, 0
        for c in clients:
            idx = partition[c]
            n = len(idx)
            if n == 0:
                continue
            state = local_fit(local_model, global_state, x_train[idx], y_train[idx], fit, gen)
            if acc_state is None:
                acc_state = {k: v * n for k, v in state.items()}
            else:
                for k, v in state.items():
                    acc_state[k] += v * n
            total += n
        global_model.load_state_dict({k: v / total for k, v in acc_state.items()})
        acc, loss = evaluate(global_model, x_test, y_test)
        now = time.perf_counter()
        wall = now - t0
        if target > 0 and target_round == 0 and acc >= target:
            target_round, target_wall = r, wall
        rounds.append({"round": r, "test_accuracy": acc, "test_loss": loss, "wall_seconds": now - tr,
                       "wall_clock": wall, "num_examples": total})
        write_out(args.out, rounds, t0, target, target_round, target_wall)  # partial results survive a kill
        print(f"round {r:3d}/{len(selection)}  acc {100 * acc:6.2f}%  loss {loss:.4f}  {now - tr:.2f}s  "
              f"wall {wall:.1f}s", flush=True)
    if target > 0:
        print(f"reached {100 * target:.2f}% at round {target_round} after {target_wall:.1f} s wall" if target_round
              else f"did not reach {100 * target:.2f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
