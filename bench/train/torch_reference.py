#!/usr/bin/env python3
"""The plain PyTorch training loop a user would otherwise write, as the reference for bench/train.

Trains the same models (mlp, cnn, lenet, and the reference edge models of examples/models/:
conv1d_recognizer over the 28 rows as steps of 28 channels, and mobile_cnn; same layers, same SGD
step) on random 28x28x1 data, and char_lstm (an embedding, an LSTM of 128 units, a dense head) on
random windows of 32 token ids of 97,
single-threaded, and prints one JSON line per (model, batch) with samples/s. Uses Debian's
python3-torch (run with /usr/bin/python3). scripts/bench-train runs it next to train_bench.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(),
                             nn.Linear(200, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))
    if name == "lenet":
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    if name == "conv1d_recognizer":
        return nn.Sequential(Rows(), nn.Conv1d(28, 32, 5, padding=2), nn.ReLU(),
                             nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(),
                             nn.Conv1d(64, 64, 3, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 10))
    if name == "mobile_cnn":
        def block(c_in, c_out, groups_in, groups_out):
            return [nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in), nn.GroupNorm(groups_in, c_in),
                    nn.ReLU(), nn.Conv2d(c_in, c_out, 1), nn.GroupNorm(groups_out, c_out), nn.ReLU(),
                    nn.MaxPool2d(2)]
        residual = Residual(nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.GroupNorm(8, 32),
                            nn.ReLU(), nn.Conv2d(32, 32, 1), nn.GroupNorm(8, 32))
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.ReLU(),
                             *block(16, 32, 4, 8), residual, *block(32, 64, 8, 8),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    if name == "char_lstm":
        return CharLstm()
    raise SystemExit(f"unknown model {name}")


class Residual(nn.Sequential):
    """x + the block's output (mobile_cnn's `add`)."""

    def forward(self, x):
        return x + super().forward(x)


class CharLstm(nn.Module):
    """examples/models/char_lstm.toml: 32 token ids, embedding 16, LSTM 128 (the last step's
    state), dense 97."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(97, 16)
        self.lstm = nn.LSTM(16, 128, batch_first=True)
        self.head = nn.Linear(128, 97)

    def forward(self, x):
        _, (h, _) = self.lstm(self.embed(x))
        return self.head(h[0])


class Rows(nn.Module):
    """[N, 1, 28, 28] images as Conv1d's [N, 28 channels, 28 steps]: the rows are the steps."""

    def forward(self, x):
        return x.flatten(1, 2).transpose(1, 2)


def bench(name, batch, seconds):
    torch.manual_seed(1)
    model = make_model(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    n = 1024
    if name == "char_lstm":
        x = torch.randint(0, 97, (n, 32))
        y = torch.randint(0, 97, (n,))
    else:
        x = torch.rand(n, 1, 28, 28)
        y = torch.randint(0, 10, (n,))

    def step(i):
        lo = (i * batch) % (n - batch + 1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[lo:lo + batch]), y[lo:lo + batch])
        loss.backward()
        opt.step()

    for i in range(5):  # warm-up
        step(i)
    steps, t0 = 0, time.perf_counter()
    while True:
        step(steps)
        steps += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds and steps >= 5:
            break
    return steps * batch / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp,cnn,lenet,conv1d_recognizer,mobile_cnn,char_lstm")
    ap.add_argument("--batches", default="10,32,64")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            sps = bench(name, batch, args.seconds)
            print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "model": name, "batch": batch,
                              "samples_per_second": round(sps, 1)}), flush=True)


if __name__ == "__main__":
    main()
