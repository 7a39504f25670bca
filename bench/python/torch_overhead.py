#!/usr/bin/python3
"""What the Python bindings add to a PyTorch client's round.

The same PyTorch training (Fashion-MNIST's mlp, 784-200-200-10, one epoch of SGD over one
client's share, batch 32, one torch thread) is timed two ways in one process:
  plain      TorchTrainer.train_epochs called directly: a plain PyTorch training loop;
  tributary  the same trainer as a tributary.Client of a real tributary-coordinator over mutual TLS
             on loopback: per round, the client's task time (TaskReport.seconds: weights into
             NumPy and torch, the loop, weights back, the delta, encoding) and the coordinator's
             round duration (assignment sent to update folded in).
Plain epochs run before and after the rounds (medians of all). Prints a JSON summary.

    PYTHONPATH=build/release/python bench/python/torch_overhead.py --build build/release
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "pytorch"))
import tributary as tb  # noqa: E402
from torch_client import make_model  # noqa: E402
from torch_trainer import TorchTrainer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--num-clients", type=int, default=10, help="the share: 1/N of the train set")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tb.set_log_level("warn")
    bins = {n: os.path.join(a.build, d, n) for n, d in (
        ("tributary-certs", "crypto"), ("tributary-coordinator", "coordinator"))}

    data = tb.load_data({"data.num_clients": a.num_clients, "data.client_index": 0,
                         "data.partition": "iid"})
    x, y = data["train"]
    model = make_model(784, [200, 200], 10, seed=1)
    trainer = TorchTrainer(model, x, y)
    config = tb.FitConfig()
    config.epochs, config.batch_size, config.lr = 1, 32, 0.05

    work = tempfile.mkdtemp(prefix="trib_overhead_")
    pki = os.path.join(work, "pki")
    for args in (["init"], ["server", "--host", "localhost", "--ip", "127.0.0.1"],
                 ["client", "--id", "torch"]):
        subprocess.run([bins["tributary-certs"], *args, "--dir", pki], check=True,
                       capture_output=True)
    init = os.path.join(work, "init.safetensors")
    tb.save_safetensors(init, tb.from_torch(model))
    ready, events = os.path.join(work, "ready"), os.path.join(work, "events.jsonl")
    with open(os.path.join(work, "coordinator.toml"), "w") as f:
        f.write(f"""log_level = "warn"
[net]
listen = "127.0.0.1:0"
[tls]
ca = "{pki}/ca.crt"
cert = "{pki}/server.crt"
key = "{pki}/server.key"
[run]
model = ""
initial_model = "{init}"
rounds = {a.rounds}
clients_per_round = 1
min_available = 1
round_timeout_s = 600
codec = "dense"
[fit]
epochs = 1
batch_size = 32
lr = 0.05
[eval]
every = 0
[output]
event_log = "{events}"
ready_file = "{ready}"
""")
    coord = subprocess.Popen([bins["tributary-coordinator"], "--config",
                              os.path.join(work, "coordinator.toml")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(ready):
        time.sleep(0.05)
    with open(ready) as f:
        addr = f.read().strip()

    plain, task, loop = [], [], []

    def plain_epochs():
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            trainer.train_epochs(config)
            plain.append(time.perf_counter() - t0)

    def on_task(r):
        task.append(r.seconds)
        loop.append(trainer.last_fit_seconds)

    options = tb.ClientOptions(coordinator=addr, ca_cert_file=f"{pki}/ca.crt",
                               cert_file=f"{pki}/clients/torch.crt",
                               key_file=f"{pki}/clients/torch.key", num_examples=len(y),
                               on_task=on_task)
    # Plain epochs before and after the rounds, so both see the same machine state.
    plain_epochs()
    tb.Client(options, trainer).run()
    coord.wait()
    plain_epochs()
    with open(events) as f:
        rounds = [json.loads(l)["duration_s"] for l in f if '"round_closed"' in l]

    med = statistics.median
    out = {
        "examples": len(y), "rounds": a.rounds, "torch": torch.__version__,
        "plain_epoch_s": med(plain), "loop_in_client_s": med(loop), "client_task_s": med(task),
        "coordinator_round_s": med(rounds),
        "bindings_overhead": med(task) / med(plain) - 1.0,
        "round_overhead": med(rounds) / med(plain) - 1.0,
        "all": {"plain": plain, "loop": loop, "task": task, "round": rounds},
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
