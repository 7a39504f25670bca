#!/usr/bin/python3
"""torch_client.py: a PyTorch client of a tributary-coordinator, over mutual TLS.

It trains an MLP in PyTorch (nn.Sequential: Flatten, Linear, ReLU, ..., Linear) on its share of a
data set -- the same share tributary-client would take with the same data.* keys -- alongside C++
clients (tributary-client) of the same run. The model's state_dict names ("1.weight", "1.bias",
"3.weight", ...) are the run's tensors: the coordinator runs the model file mlp_torch.toml (the
same layers, named "1", "3", "5"), or starts from a file this script writes with --init.

    # the starting weights, from PyTorch (optional: the coordinator can draw its own)
    PYTHONPATH=build/release/python examples/pytorch/torch_client.py --init init.safetensors
    # a client
    PYTHONPATH=build/release/python examples/pytorch/torch_client.py --coordinator HOST:PORT \\
        --ca ca.crt --cert me.crt --key me.key --num-clients 2 --client-index 1

Split learning (docs/split.md): with --split CUT the client holds only the model's layers before
CUT (for the MLP and CUT 3: Flatten, Linear, ReLU) and trains them through the coordinator's
server part (TorchSplitTrainer); the coordinator runs split_coordinator.toml (split.mode,
split.cut = 3). With --split-head HEAD too (the U-shaped split, the coordinator's split.head) it
also holds the layers from HEAD on, with the loss, and the labels never leave it.

Exit status: 0 when the coordinator completed the run, 1 otherwise (the reason is printed).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tributary as tb  # noqa: E402
from torch_split_trainer import TorchSplitTrainer  # noqa: E402
from torch_trainer import TorchTrainer  # noqa: E402


def make_model(in_features, hidden, classes, seed):
    torch.manual_seed(seed)
    layers = [torch.nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, classes))
    return torch.nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coordinator")
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--state-dir", default="")
    ap.add_argument("--hidden", default="200,200", help="hidden layer widths (mlp: 200,200)")
    ap.add_argument("--seed", type=int, default=1, help="seeds the initial weights")
    ap.add_argument("--init", help="write the model's initial weights here (safetensors) and exit")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a data.* key, e.g. data.dataset=synthetic (as tributary-client takes it)")
    ap.add_argument("--num-clients", type=int, default=1)
    ap.add_argument("--client-index", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--split", type=int, default=0, metavar="CUT",
                    help="split learning: hold and train only the layers before CUT (0: off)")
    ap.add_argument("--split-head", type=int, default=0, metavar="HEAD",
                    help="the U-shaped split: also hold the layers from HEAD on and keep the "
                         "labels (the coordinator's split.head; 0: off)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    config = {"data.num_clients": a.num_clients, "data.client_index": a.client_index}
    for kv in a.set:
        key, _, value = kv.partition("=")
        config[key] = value
    data = tb.load_data(config)
    x, y = data["train"]
    hidden = [int(h) for h in a.hidden.split(",") if h]
    model = make_model(x[0].size, hidden, data["num_classes"], a.seed)
    if a.init:
        os.makedirs(os.path.dirname(os.path.abspath(a.init)), exist_ok=True)
        tb.save_safetensors(a.init, tb.from_torch(model), {"producer": "torch_client.py"})
        print(f"wrote {a.init}: {sum(p.numel() for p in model.parameters())} parameters")
        return 0
    x_eval, y_eval = data["eval"] if data["eval"] is not None else (None, None)
    if a.split:
        if not 0 < a.split < len(model):
            ap.error(f"--split {a.split}: the model has layers 0..{len(model) - 1}")
        head = None
        if a.split_head:
            if not a.split < a.split_head < len(model):
                ap.error(f"--split-head {a.split_head}: must be in [{a.split + 1}, "
                         f"{len(model) - 1}]")
            head = model[a.split_head:]  # the head, named as the whole model names it
        model = model[:a.split]  # the device part; a slice keeps the whole model's names
        trainer = TorchSplitTrainer(model, x, y, head=head)
    else:
        trainer = TorchTrainer(model, x, y, x_eval, y_eval)
    options = tb.ClientOptions(coordinator=a.coordinator, ca_cert_file=a.ca, cert_file=a.cert,
                               key_file=a.key, state_dir=a.state_dir, num_examples=len(y),
                               device="cpu (pytorch)", split=a.split > 0)
    options.backoff.max_attempts = 30

    def report(r):
        what = "fit" if r.kind == tb.TaskReport.Kind.FIT else "evaluate"
        print(f"round {r.round}: {what} loss {r.loss:.4f} accuracy {100 * r.accuracy:.2f}% on "
              f"{r.num_examples} examples in {r.seconds:.2f}s", flush=True)

    options.on_task = report
    print(f"torch_client.py: {data['description']}; model {model}", flush=True)
    try:
        tb.Client(options, trainer).run()
    except tb.Error as e:
        print(f"torch_client.py: the run did not complete: {e.code}: {e}", file=sys.stderr)
        return 1
    print("torch_client.py: the run is complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
