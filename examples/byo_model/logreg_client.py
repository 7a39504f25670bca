#!/usr/bin/python3
"""logreg_client.py: bring your own model, in Python. The same binary classifier as
logreg_client.cc, written with NumPy: logistic regression ("weight" [1, D], "bias" [1]) or, with
--hidden H, a two-layer tanh net ("encoder/0.W" [H, D], "encoder/0.b" [H], "head:W" [1, H],
"head:b" [1]), trained by full-batch gradient descent, one step per epoch.

    PYTHONPATH=build/release/python ./logreg_client.py --coordinator HOST:PORT --ca ca.crt \\
        --cert me.crt --key me.key --features x.f32 --labels y.f32 --dim 20 [--hidden 8]

Exit status: 0 when the coordinator completed the run, 1 otherwise (the reason is printed).
"""
import argparse
import sys

import numpy as np

import tributary as tb


class BinaryTrainer(tb.Trainer):
    def __init__(self, x, y, hidden):
        self.x, self.y, self.hidden = x.astype(np.float64), y.astype(np.float64), hidden

    def get_parameters(self):
        d, h = self.x.shape[1], self.hidden
        if h == 0:
            return {"weight": np.zeros((1, d), np.float32), "bias": np.zeros(1, np.float32)}
        return {"encoder/0.W": np.zeros((h, d), np.float32), "encoder/0.b": np.zeros(h, np.float32),
                "head:W": np.zeros((1, h), np.float32), "head:b": np.zeros(1, np.float32)}

    def _pass(self, p, want_grad):
        """Mean binary cross-entropy, accuracy and (optionally) the gradient, over all the data."""
        x, y, n = self.x, self.y, len(self.y)
        if self.hidden == 0:
            hid, w2, b2 = x, p["weight"].astype(np.float64), p["bias"].astype(np.float64)
        else:
            w1, b1 = p["encoder/0.W"].astype(np.float64), p["encoder/0.b"].astype(np.float64)
            hid = np.tanh(x @ w1.T + b1)
            w2, b2 = p["head:W"].astype(np.float64), p["head:b"].astype(np.float64)
        z = hid @ w2[0] + b2[0]
        loss = float(np.mean(np.maximum(z, 0) - y * z + np.log1p(np.exp(-np.abs(z)))))
        accuracy = float(np.mean((z > 0) == (y > 0.5)))
        if not want_grad:
            return loss, accuracy, None
        g = (1.0 / (1.0 + np.exp(-z)) - y) / n
        grads = {}
        names = ("weight", "bias") if self.hidden == 0 else ("head:W", "head:b")
        grads[names[0]] = (g @ hid)[None, :]
        grads[names[1]] = np.array([g.sum()])
        if self.hidden:
            dh = np.outer(g, w2[0]) * (1.0 - hid * hid)
            grads["encoder/0.W"] = dh.T @ x
            grads["encoder/0.b"] = dh.sum(axis=0)
        return loss, accuracy, grads

    def fit(self, parameters, config):
        p = {k: v.copy() for k, v in parameters.items()}
        steps = config.epochs if config.max_steps <= 0 else min(config.epochs, config.max_steps)
        loss = accuracy = 0.0
        for _ in range(steps):
            loss, accuracy, grads = self._pass(p, True)
            for k in p:
                p[k] = (p[k] - np.float32(config.lr) * grads[k].astype(np.float32)).astype(np.float32)
        return tb.FitResult(p, len(self.y), {"train_loss": loss, "train_accuracy": accuracy})

    def evaluate(self, parameters, config):
        loss, accuracy, _ = self._pass(parameters, False)
        return tb.EvalResult(loss, accuracy, len(self.y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--coordinator", "--ca", "--cert", "--key", "--features", "--labels"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--hidden", type=int, default=0)
    ap.add_argument("--state-dir", default="")
    a = ap.parse_args()
    x = np.fromfile(a.features, dtype="<f4").reshape(-1, a.dim)
    y = np.fromfile(a.labels, dtype="<f4")
    options = tb.ClientOptions(coordinator=a.coordinator, ca_cert_file=a.ca, cert_file=a.cert,
                               key_file=a.key, state_dir=a.state_dir, num_examples=len(y))
    options.backoff.max_attempts = 20
    try:
        tb.Client(options, BinaryTrainer(x, y, a.hidden)).run()
    except tb.Error as e:
        print(f"logreg_client.py: the run did not complete: {e.code}: {e}", file=sys.stderr)
        return 1
    print("logreg_client.py: the run is complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
